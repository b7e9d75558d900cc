'use strict';
// deskd's one addition to noVNC's page (vnc.html, which deskd-web serves with this script):
// files dropped on one's own desktop's page go into the upload folder of its owner's home
// (Downloads unless the admin says otherwise) through the portal's file calls, as the portal's
// file view sends them (docs/PROTOCOL.md, "Files"): a POST that makes the file, then a PUT of
// its bytes, with their progress, speed, Cancel, and Keep both / Replace for a name taken.
//
// Offered only to the desktop's owner logged in to the portal in this browser: the portal's
// Open names the desktop (deskd_session in the fragment); the page asks the portal for the
// login (/api/session, for its CSRF token) and for the owner's home, and anything else (a
// view-only or another's link, another user, an admin, no login) gets no drop target at all.
// A file dropped anyway is never opened by the browser (which would leave the desktop).
// document.documentElement's data-deskd-drop says where it stands: checking, offered, off.
(() => {
  const MOST_UPLOADS = 2;
  // Read once the page knows its desktop: at once, or (a viewer the portal opened at the click,
  // /deskd-viewer.js) when the link has come and the page is about to connect.
  let fragment = new URLSearchParams(location.hash.slice(1));
  let session = fragment.get('deskd_session') || '';
  const root = document.documentElement;
  let offer = null;          // {csrf, folder} once the portal has said this is the owner
  let hint = null, panel = null, list = null, live = null, clear = null;
  const queue = [], running = new Set();

  const carriesFiles = (event) => event.dataTransfer && Array.from(event.dataTransfer.types).includes('Files');
  const place = (folder) => (folder ? folder : 'your home folder');
  const css = (element, rules) => Object.assign(element.style, rules);

  function bytes(n) {
    if (n < 1000) return n + (n === 1 ? ' byte' : ' bytes');
    const units = ['kB', 'MB', 'GB', 'TB', 'PB'];
    let value = n / 1000, unit = 0;
    while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit++; }
    return value.toFixed(1) + ' ' + units[unit];
  }

  function filesURL(verb, fields) {
    const query = Object.entries(fields || {}).map(([key, value]) => key + '=' + encodeURIComponent(value)).join('&');
    return '/api/files/' + encodeURIComponent(session) + '/' + verb + (query ? '?' + query : '');
  }

  async function getJSON(path) {
    const response = await fetch(path, { credentials: 'same-origin', cache: 'no-store' });
    return { ok: response.ok, status: response.status, answer: await response.json().catch(() => ({})) };
  }

  // ---- Whether to offer it at all

  async function check() {
    root.dataset.deskdDrop = 'checking';
    if (!/^[0-9a-f]{1,64}$/.test(session) || fragment.get('view_only') === '1') return (root.dataset.deskdDrop = 'off');
    try {
      const who = await getJSON('/api/session');
      if (!who.ok || !who.answer.identity || !who.answer.identity.csrf) return (root.dataset.deskdDrop = 'off');
      // The owner's home, listed: only the owner's login gets it (deskd decides, as for the portal).
      const home = await getJSON(filesURL('list', { path: '' }));
      if (!home.ok) return (root.dataset.deskdDrop = 'off');
      offer = { csrf: who.answer.identity.csrf, folder: home.answer.uploadFolder || '' };
      root.dataset.deskdDrop = 'offered';
    } catch (error) {
      root.dataset.deskdDrop = 'off';
    }
  }

  // ---- The drop target: the whole page, while files are dragged over it

  let hiding = 0;
  function showHint(on) {
    clearTimeout(hiding);
    if (!offer) return;
    if (!hint) {
      hint = document.createElement('div');
      hint.id = 'deskd-drop-hint';
      css(hint, {
        position: 'fixed', inset: '0', zIndex: '2147483600', pointerEvents: 'none', display: 'flex',
        alignItems: 'center', justifyContent: 'center', background: 'rgba(12, 40, 80, .35)',
        outline: '4px dashed #fff', outlineOffset: '-12px',
      });
      const words = document.createElement('p');
      css(words, {
        margin: '0', padding: '1rem 1.5rem', borderRadius: '8px', background: '#fff', color: '#0c2850',
        font: '600 20px/1.3 system-ui, sans-serif', boxShadow: '0 4px 18px rgba(0, 0, 0, .35)',
      });
      hint.append(words);
      document.body.append(hint);
    }
    hint.firstChild.textContent = 'Drop to upload to ' + place(offer.folder);
    hint.hidden = !on;
    hint.style.display = on ? 'flex' : 'none';
  }

  // dragover comes every few dozen milliseconds while files are over the page; a dragleave with
  // none after it is the drag gone (out of the window, or ended).
  const hideSoon = () => { clearTimeout(hiding); hiding = setTimeout(() => showHint(false), 200); };

  // Captured at the window, before noVNC's own handlers: its canvas is under the pointer.
  for (const type of ['dragenter', 'dragover', 'drop']) {
    window.addEventListener(type, (event) => {
      if (!carriesFiles(event)) return;
      event.preventDefault();
      event.dataTransfer.dropEffect = offer ? 'copy' : 'none';
      if (type !== 'drop') return showHint(true);
      event.stopPropagation();
      showHint(false);
      if (offer) take(event.dataTransfer);
    }, true);
  }
  window.addEventListener('dragleave', (event) => { if (carriesFiles(event)) hideSoon(); }, true);
  window.addEventListener('dragend', () => showHint(false), true);

  // ---- The overlay: one row per file

  function button(text, label, action) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = text;
    if (label) b.setAttribute('aria-label', label);
    css(b, {
      font: '13px/1.2 system-ui, sans-serif', padding: '.25rem .6rem', margin: '0', borderRadius: '4px',
      border: '1px solid #1a4d8f', background: '#fff', color: '#1a4d8f', cursor: 'pointer', minHeight: '1.8rem',
    });
    b.addEventListener('click', action);
    return b;
  }

  function ensurePanel() {
    if (panel) return;
    panel = document.createElement('section');
    panel.id = 'deskd-drop';
    panel.setAttribute('aria-label', 'Uploads to ' + place(offer.folder));
    css(panel, {
      position: 'fixed', right: '12px', bottom: '12px', zIndex: '2147483500', width: 'min(26rem, calc(100vw - 24px))',
      maxHeight: '45vh', overflowY: 'auto', boxSizing: 'border-box', padding: '.6rem .75rem', borderRadius: '8px',
      background: '#fff', color: '#1b1b1b', font: '13px/1.35 system-ui, sans-serif', textAlign: 'left',
      boxShadow: '0 4px 18px rgba(0, 0, 0, .4)',
    });
    const head = document.createElement('div');
    css(head, { display: 'flex', alignItems: 'center', justifyContent: 'space-between', gap: '.5rem' });
    const title = document.createElement('h2');
    title.textContent = 'Uploads to ' + place(offer.folder);
    css(title, { margin: '0', font: '600 14px/1.3 system-ui, sans-serif', color: '#1b1b1b' });
    clear = button('Clear finished', 'Clear the finished uploads', () => {
      for (const row of list.querySelectorAll('li.done')) row.remove();
      if (!list.children.length) { panel.remove(); panel = null; }
      else clear.hidden = true;
    });
    clear.hidden = true;
    head.append(title, clear);
    list = document.createElement('ul');
    css(list, { listStyle: 'none', margin: '.4rem 0 0', padding: '0' });
    live = document.createElement('p');
    live.setAttribute('role', 'status');
    // Read by screen readers, not shown.
    css(live, { position: 'absolute', width: '1px', height: '1px', overflow: 'hidden', clipPath: 'inset(50%)', margin: '-1px', whiteSpace: 'nowrap' });
    panel.append(head, list, live);
    document.body.append(panel);
  }

  const say = (text) => { if (live) live.textContent = text; };

  function take(transfer) {
    const files = [], folders = [];
    for (const item of Array.from(transfer.items || [])) {
      const entry = item.kind === 'file' && item.webkitGetAsEntry ? item.webkitGetAsEntry() : null;
      if (entry && entry.isDirectory) folders.push(entry.name);
      else if (item.kind === 'file' && item.getAsFile()) files.push(item.getAsFile());
    }
    if (!transfer.items) files.push(...Array.from(transfer.files || []));
    ensurePanel();
    for (const file of files) queue.push(row(file));
    if (folders.length) note('Folders are not uploaded (' + folders.join(', ') + '); drop the files in them instead.');
    if (files.length) say(files.length + (files.length === 1 ? ' file' : ' files') + ' to upload into ' + place(offer.folder) + '.');
    pump();
  }

  function note(text) {
    const item = document.createElement('li');
    item.className = 'done failed';
    item.textContent = text;
    css(item, { padding: '.35rem 0', borderTop: '1px solid #ddd', color: '#a4161a', fontWeight: '600' });
    list.append(item);
    clear.hidden = false;
    say(text);
  }

  function row(file) {
    const item = document.createElement('li');
    item.className = 'upload';
    item.dataset.name = file.name;
    css(item, { display: 'flex', flexWrap: 'wrap', alignItems: 'center', gap: '.25rem .5rem', padding: '.35rem 0', borderTop: '1px solid #ddd' });
    const name = document.createElement('span');
    name.className = 'upload-name';
    name.textContent = file.name + ' (' + bytes(file.size) + ')';
    css(name, { flexBasis: '100%', fontWeight: '600', overflowWrap: 'anywhere' });
    const bar = document.createElement('progress');
    bar.max = Math.max(1, file.size);
    bar.value = 0;
    bar.setAttribute('aria-label', 'Upload of ' + file.name);
    css(bar, { width: '9rem', height: '.8rem' });
    const status = document.createElement('span');
    status.className = 'upload-status';
    status.tabIndex = -1;
    status.textContent = 'Waiting';
    css(status, { flex: '1 1 9rem' });
    const job = { file, folder: offer.folder, csrf: offer.csrf, exists: 'ask', row: item, bar, status, xhr: null, done: false };
    job.cancel = button('Cancel', 'Cancel the upload of ' + file.name, () => cancel(job));
    job.cancel.className = 'cancel';
    item.append(name, bar, status, job.cancel);
    list.append(item);
    return job;
  }

  function pump() {
    while (running.size < MOST_UPLOADS && queue.length) {
      const job = queue.shift();
      running.add(job);
      send(job).then(() => { running.delete(job); pump(); });
    }
  }

  async function send(job) {
    job.status.textContent = 'Starting';
    let begun, answer = {};
    try {
      begun = await fetch(filesURL('uploads'), {
        method: 'POST', credentials: 'same-origin', cache: 'no-store',
        headers: { 'Content-Type': 'application/json', 'X-Deskd-CSRF': job.csrf },
        body: JSON.stringify({ folder: job.folder, name: job.file.name, size: job.file.size, exists: job.exists }),
      });
      answer = await begun.json().catch(() => ({}));
    } catch (error) {
      return finish(job, 'The portal could not be reached; try again.', true);
    }
    if (job.done) return;
    if (begun.status !== 201) return answered(job, begun.status, answer);
    return new Promise((resolve) => {
      const xhr = new XMLHttpRequest();
      const started = performance.now();
      job.xhr = xhr;
      xhr.open('PUT', filesURL('uploads/' + encodeURIComponent(answer.upload)));
      xhr.setRequestHeader('X-Deskd-CSRF', job.csrf);
      xhr.setRequestHeader('Content-Type', 'application/octet-stream');
      xhr.upload.addEventListener('progress', (event) => progressed(job, event.loaded, started));
      xhr.upload.addEventListener('load', () => sent(job));
      xhr.addEventListener('load', () => {
        let reply = {};
        try { reply = JSON.parse(xhr.responseText); } catch (error) { /* the status says it */ }
        answered(job, xhr.status, reply);
      });
      xhr.addEventListener('error', () => finish(job, 'The upload was cut off before the portal answered; try again.', true));
      xhr.addEventListener('abort', () => finish(job, 'Cancelled'));
      xhr.addEventListener('loadend', () => { job.xhr = null; resolve(); });
      xhr.send(job.file);
    });
  }

  function progressed(job, loaded, started) {
    const seconds = (performance.now() - started) / 1000;
    job.bar.value = loaded;
    job.status.textContent = bytes(loaded) + ' of ' + bytes(job.file.size) +
      (seconds > 0.25 ? ', ' + (loaded / 1e6 / seconds).toFixed(1) + ' MB/s' : '');
  }

  // Every byte is on its way: a cancel now could come after the file is stored, so none is offered.
  function sent(job) {
    const hadFocus = job.cancel === document.activeElement;
    job.cancel.remove();
    job.status.textContent = 'All ' + bytes(job.file.size) + ' sent; the portal is storing it';
    if (hadFocus) job.status.focus();
  }

  function answered(job, status, answer) {
    const why = answer && answer.error && answer.error.message;
    if (status === 201) {
      job.bar.value = job.bar.max;
      finish(job, 'Uploaded as ' + (answer.name || job.file.name));
    } else if (status === 409 && job.exists === 'ask') {
      ask(job, why || 'A file of that name is there already: keep both, or replace it.');
    } else {
      finish(job, why || 'The upload failed (the portal answered ' + status + ').', true);
      // The login is gone: no more drops until the page is opened again from the portal.
      if (status === 401) offer = null;
    }
  }

  function ask(job, sentence) {
    job.status.textContent = sentence;
    const choose = (exists) => () => {
      const hadFocus = job.row.contains(document.activeElement);
      for (const b of job.row.querySelectorAll('.keep-both, .replace')) b.remove();
      job.exists = exists;
      job.status.textContent = 'Waiting';
      if (hadFocus) job.cancel.focus();
      queue.unshift(job);
      pump();
    };
    const keep = button('Keep both', 'Keep both: upload ' + job.file.name + ' under a new name', choose('keep'));
    keep.className = 'keep-both';
    const replace = button('Replace', 'Replace the ' + job.file.name + ' there with this one', choose('replace'));
    replace.className = 'replace';
    job.row.append(keep, replace, job.cancel);
    say(job.file.name + ': ' + sentence);
  }

  function cancel(job) {
    if (job.done) return;
    if (job.xhr) return job.xhr.abort();
    const waiting = queue.indexOf(job);
    if (waiting >= 0) queue.splice(waiting, 1);
    finish(job, 'Cancelled');
  }

  function finish(job, text, failed) {
    if (job.done) return;
    const hadFocus = job.row.contains(document.activeElement);
    job.done = true;
    job.status.textContent = text;
    job.row.classList.add('done');
    if (failed) {
      job.row.classList.add('failed');
      css(job.status, { color: '#a4161a', fontWeight: '600' });
    }
    for (const b of job.row.querySelectorAll('button')) b.remove();
    if (hadFocus) job.status.focus();
    clear.hidden = false;
    say(job.file.name + ': ' + text + (/[.!?]$/.test(text) ? '' : '.'));
  }

  // The viewer's script may not have run yet (it loads async): its fragment says it will wait.
  const viewerWaits = root.dataset.deskdViewer === 'waiting' || (!root.dataset.deskdViewer && fragment.get('deskd_wait') === '1');
  if (viewerWaits) {
    root.dataset.deskdDrop = 'checking';
    window.addEventListener('deskd-viewer-open', () => {
      fragment = new URLSearchParams(location.hash.slice(1));
      session = fragment.get('deskd_session') || '';
      check();
    }, { once: true });
  } else {
    check();
  }
})();
