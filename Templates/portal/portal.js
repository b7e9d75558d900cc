'use strict';
// The portal: a thin client of deskd's API. /api/request takes the control protocol's
// requests (the same as deskctl's, docs/PROTOCOL.md) and answers with its responses.
const $ = (id) => document.getElementById(id);
let identity = null;       // {user, uid, isAdmin, csrf, idleSeconds, lifetimeSeconds}
let attempt = null;        // a login's further question
let known = new Map();     // display → session, as last seen
let ended = new Map();     // display → the session when it went away
let idleDeadline = 0;      // when the login ends without activity (ms since epoch)
let poller = null, ticker = null;
let events = null;         // the live updates (server-sent events from /api/events)
const panels = new Map();  // session id → its card's open panel

function announce(text) {
  $('announce').textContent = text;
}

function show(view) {
  $('login-view').hidden = view !== 'login';
  $('desktops-view').hidden = view !== 'desktops';
  $('who').hidden = view !== 'desktops';
}

async function api(path, body, background) {
  const headers = { 'Content-Type': 'application/json' };
  if (identity) headers['X-Deskd-CSRF'] = identity.csrf;
  if (background) headers['X-Deskd-Background'] = '1';
  const response = await fetch(path, {
    method: body === undefined ? 'GET' : 'POST', headers, credentials: 'same-origin', cache: 'no-store',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  if (response.status === 401 && path !== '/api/session') loggedOut('Your login has ended; log in again.');
  return { status: response.status, ok: response.ok, answer };
}

// A control-protocol request as the logged-in user.
async function request(command, fields, background) {
  const result = await api('/api/request', Object.assign({ version: 1, command }, fields || {}), background);
  if (!background && result.status !== 401) touched();
  return result;
}

function message(result, fallback) {
  return (result.answer && result.answer.error && result.answer.error.message) || fallback;
}

// ---- Logging in and out

function loggedIn(who) {
  identity = who;
  attempt = null;
  $('user').textContent = who.user + (who.isAdmin ? ' (admin)' : '') + (who.singleSignOn ? ', signed on by your site' : '');
  $('login-form').reset();
  $('question-form').hidden = true;
  $('login-form').hidden = false;
  $('login-error').textContent = '';
  show('desktops');
  touched(who.idleSeconds);
  loadDesktops();
  refresh();
  listen();
  clearInterval(ticker);
  ticker = setInterval(tick, 1000);
  $('desktops-title').focus?.();
}

// Changes arrive as they happen: deskd says "change" and the page asks for the list. If
// the stream cannot be had (a proxy that buffers it, say), the page asks every 5 s instead.
function listen() {
  if (events) events.close();
  clearInterval(poller);
  poller = null;
  if (!window.EventSource) { poller = setInterval(refresh, 5000); return; }
  events = new EventSource('/api/events');
  events.addEventListener('change', () => refresh());
  events.addEventListener('logout', () => { events.close(); refresh(); });
  events.addEventListener('open', () => { if (poller) { clearInterval(poller); poller = null; refresh(); } });
  events.addEventListener('error', () => {
    if (!poller && identity) poller = setInterval(refresh, 5000);
  });
}

function loggedOut(why) {
  identity = null;
  if (events) { events.close(); events = null; }
  clearInterval(poller);
  clearInterval(ticker);
  known = new Map();
  ended = new Map();
  $('cards').replaceChildren();
  show('login');
  document.title = 'Desktops';
  $('login-error').textContent = why || '';
  if (why) announce(why);
  $('login-user').focus();
}

function touched(seconds) {
  const idle = seconds !== undefined ? seconds : (identity ? identity.idleSeconds : 0);
  if (identity && seconds !== undefined) identity.idleSeconds = seconds;
  idleDeadline = Date.now() + idle * 1000;
  tick();
}

// A cluster desktop's time left, counted down each second; a warning in the card and
// to screen readers five minutes before its end.
const warned = new Set();
function showTimeLeft(element) {
  const left = Math.max(0, Math.round((Date.parse(element.dataset.endsAt) - Date.now()) / 1000));
  const minutes = Math.floor(left / 60), seconds = String(left % 60).padStart(2, '0');
  const idle = element.dataset.idle === '1';
  element.textContent = (left >= 3600 ? Math.floor(left / 3600) + ' h' + (minutes % 60 ? ' ' + (minutes % 60) + ' min' : '') : minutes + ':' + seconds) +
    (idle ? ' without a viewer' : '') + (left <= 300 ? ' — it ends soon: ' + (idle ? 'open it to keep it' : 'save your work') : '');
  element.classList.toggle('ending', left <= 300);
  const key = element.dataset.display + '@' + element.dataset.endsAt;
  if (left <= 300 && left > 0 && !warned.has(key)) {
    warned.add(key);
    announce('Desktop :' + element.dataset.display + ' ends in ' + Math.max(1, Math.round(left / 60)) + ' minutes' +
             (idle ? ' unless someone opens it.' : '; save your work' + (cluster && cluster.extendMaxSeconds ? ' or extend it.' : '.')));
  }
}

async function extend(session, seconds) {
  const result = await request('extend', { display: session.display, extendSeconds: seconds });
  if (!result.ok) return ($('desktops-error').textContent = message(result, 'The desktop could not be extended.'));
  $('desktops-error').textContent = '';
  announce('Desktop :' + session.display + ' now runs ' + clock(seconds) + ' longer.');
  await refresh();
}

function tick() {
  document.querySelectorAll('.time-left').forEach(showTimeLeft);
  const left = Math.max(0, Math.round((idleDeadline - Date.now()) / 1000));
  const minutes = Math.floor(left / 60), seconds = String(left % 60).padStart(2, '0');
  $('countdown').textContent = 'Logged out in ' + minutes + ':' + seconds + ' without activity';
  if (left === 60) announce('You will be logged out in one minute without activity.');
  if (identity && left === 0) {
    api('/api/session').then((result) => {
      if (result.status === 401) loggedOut('You were logged out after a time without activity.');
      else touched(result.answer.identity.idleSeconds);
    });
  }
}

function step(result) {
  if (result.ok && result.answer.identity) return loggedIn(result.answer.identity);
  if (result.ok && result.answer.question) {
    const question = result.answer.question;
    attempt = question.attempt;
    $('login-form').hidden = true;
    $('question-form').hidden = false;
    $('question-messages').replaceChildren(...question.messages.map((text) => {
      const p = document.createElement('p');
      p.textContent = text;
      return p;
    }));
    $('question-text').textContent = question.text;
    $('question-answer').type = question.echo ? 'text' : 'password';
    $('question-answer').value = '';
    $('question-answer').focus();
    announce(question.text);
    return;
  }
  $('login-form').hidden = false;
  $('question-form').hidden = true;
  $('login-error').textContent = message(result, 'The login failed.');
  $('login-password').value = '';
  $('login-password').focus();
}

$('login-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  $('login-error').textContent = '';
  $('login-submit').disabled = true;
  try {
    step(await api('/api/login', { user: $('login-user').value, password: $('login-password').value }));
  } catch (error) {
    $('login-error').textContent = 'The portal did not answer; try again in a moment.';
  } finally {
    $('login-submit').disabled = false;
  }
});

$('question-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  step(await api('/api/login/answer', { attempt, answer: $('question-answer').value }));
});

$('logout').addEventListener('click', async () => {
  await api('/api/logout', {});
  loggedOut('You are logged out.');
});

// ---- Desktops

async function loadDesktops() {
  const result = await request('desktops', {}, true);
  if (!result.ok) return;
  const select = $('start-desktop');
  select.replaceChildren(...result.answer.desktops.filter((d) => d.installed).map((d) => {
    const option = document.createElement('option');
    option.value = d.name;
    option.textContent = d.name + (d.isDefault ? ' (the default)' : '');
    option.selected = d.isDefault;
    return option;
  }));
  cluster = result.answer.cluster || null;
  idleLimit = result.answer.idleLimitSeconds || null;
  $('start-where-row').hidden = !cluster;
  $('start-for-row').hidden = !identity.isAdmin;
  if (cluster) {
    const partitions = cluster.partitions.length ? cluster.partitions : [{ name: cluster.defaults.partition || '', isDefault: true, gpus: 0, isUp: true }];
    $('start-partition').replaceChildren(...partitions.map((p) => {
      const option = document.createElement('option');
      option.value = p.name;
      option.textContent = (p.name || "Slurm's default") + (p.isDefault ? ' (default)' : '') + (p.isUp === false ? ', down' : '');
      option.selected = p.name === (cluster.defaults.partition || '') || (!cluster.defaults.partition && p.isDefault);
      return option;
    }));
    $('start-time').value = cluster.defaults.time || '';
    $('start-account').value = cluster.defaults.account || '';
    clusterLimits();
  }
  whereChanged();
}

// ---- The cluster's form: what Slurm and the site allow, checked before anything is sent

let cluster = null;        // desktops' cluster choices, where this host submits to Slurm
let idleLimit = null;      // seconds a desktop here may go without a viewer (deskd --idle-limit)

function slurmSeconds(text) {
  // Slurm's forms: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
  const m = /^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$/.exec(text.trim());
  if (!m) return null;
  const [d, a, b, c] = [m[1], m[2], m[3], m[4]].map((v) => (v === undefined ? null : Number(v)));
  if (d === null) {
    if (c !== null) return a * 3600 + b * 60 + c;
    if (b !== null) return a * 60 + b;
    return a * 60;
  }
  return d * 86400 + a * 3600 + (b || 0) * 60 + (c || 0);
}

function clock(seconds) {
  const d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600), m = Math.floor(seconds % 3600 / 60);
  return (d ? d + ' d ' : '') + (h ? h + ' h ' : '') + (m || (!d && !h) ? m + ' min' : '').trim();
}

function chosenPartition() {
  if (!cluster) return null;
  const name = $('start-partition').value;
  return cluster.partitions.find((p) => p.name === name) || cluster.partitions.find((p) => p.isDefault) || null;
}

function timeLimit() {
  const partition = chosenPartition();
  const limits = [partition && partition.maxTimeSeconds, cluster && cluster.maxTimeSeconds].filter((v) => v);
  return limits.length ? Math.min(...limits) : null;
}

function clusterLimits() {
  const partition = chosenPartition();
  const most = timeLimit();
  $('start-time-hint').textContent = 'As Slurm writes it, such as 4:00:00 or 1-00:00:00' + (most ? '; at most ' + clock(most) + '.' : '.');
  $('start-cores').max = partition && partition.cores ? partition.cores : '';
  $('start-cores-hint').textContent = partition && partition.cores ? 'At most ' + partition.cores + ' (a node of ' + partition.name + ').' : 'Empty: Slurm\'s default.';
  const gpus = partition ? partition.gpus : 0;
  $('start-gpus-row').hidden = !gpus;
  $('start-gpus').max = gpus;
  $('start-gpus-hint').textContent = gpus ? 'At most ' + gpus + '.' : '';
  $('start-partition-hint').textContent = partition && partition.isUp === false ? 'This partition is down: a desktop there waits until it is up.' : '';
}

function whereChanged() {
  $('cluster-fields').hidden = !cluster || $('start-where').value !== 'cluster';
}

$('start-partition').addEventListener('change', clusterLimits);
$('start-where').addEventListener('change', whereChanged);

// What Slurm or the site would refuse, said at the field before anything is submitted;
// the fields a start sends otherwise.
function clusterFields() {
  const partition = chosenPartition();
  const fail = (field, text) => { $(field).setAttribute('aria-invalid', 'true'); $(field).focus(); throw new Error(text); };
  for (const id of ['start-time', 'start-cores', 'start-gpus']) $(id).removeAttribute('aria-invalid');
  const slurm = {};
  if ($('start-partition').value) slurm.partition = $('start-partition').value;
  const time = $('start-time').value.trim();
  if (time) {
    const seconds = slurmSeconds(time);
    if (seconds === null || seconds <= 0) fail('start-time', '\u201c' + time + '\u201d is not a time limit; write it as Slurm does, such as 4:00:00.');
    const most = timeLimit();
    if (most && seconds > most) fail('start-time', 'A desktop here may run ' + clock(most) + ' at most; ask for less.');
    slurm.time = time;
  }
  const cores = $('start-cores').value;
  if (cores) {
    if (!(Number(cores) >= 1)) fail('start-cores', 'Cores is a whole number, at least 1.');
    if (partition && partition.cores && Number(cores) > partition.cores) fail('start-cores', 'The nodes of ' + partition.name + ' have ' + partition.cores + ' cores; ask for that many at most.');
    slurm.cores = Number(cores);
  }
  const gpus = Number($('start-gpus').value || 0);
  if (gpus) {
    if (partition && gpus > partition.gpus) fail('start-gpus', 'The nodes of ' + partition.name + ' have ' + partition.gpus + ' GPUs; ask for that many at most.');
    slurm.gres = 'gpu:' + gpus;
  }
  if ($('start-account').value.trim()) slurm.account = $('start-account').value.trim();
  return slurm;
}

function ago(date) {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(date)) / 1000));
  if (seconds < 60) return seconds + ' s ago';
  if (seconds < 3600) return Math.round(seconds / 60) + ' min ago';
  return Math.round(seconds / 3600) + ' h ago';
}

function stateText(session) {
  if (session.state === 'queued' && session.slurm) return 'queued (' + (session.slurm.reason || 'waiting') + ')';
  if (session.slurm && session.slurm.node) return session.state + ' on ' + session.slurm.node;
  return session.state;
}

function button(label, kind, action) {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = label;
  if (kind) b.className = kind;
  b.addEventListener('click', action);
  return b;
}

function card(session, endedEntry) {
  const isEnded = endedEntry !== null;
  const id = 'desktop-' + session.display;
  const article = document.createElement('article');
  article.className = 'card' + (isEnded ? ' ended' : '');
  article.setAttribute('aria-labelledby', id);
  article.dataset.display = session.display;
  const title = document.createElement('h3');
  title.id = id;
  title.textContent = 'Desktop :' + session.display + (identity && session.user !== identity.user ? ' (' + session.user + ')' : '');
  const facts = document.createElement('dl');
  const rows = [['State', isEnded ? 'ended' : stateText(session)], ['Desktop', session.desktop],
                ['Size', session.geometry], ['Started', ago(session.startedAt)]];
  if (!isEnded) rows.push(['Viewers', String(session.clients)]);
  const job = session.slurm;
  if (job) {
    rows.push(['Job', job.jobId + (job.partition ? ' in ' + job.partition : '')]);
    if (job.node) rows.push(['Node', job.node]);
    if (!isEnded && job.expectedStart) rows.push(['Expected start', new Date(job.expectedStart).toLocaleString()]);
    if (!isEnded && job.endsAt) rows.push(['Time left', '']);
  } else if (!isEnded && idleLimit && session.clients === 0) {
    rows.push(['Ends unwatched in', '']);
  }
  if (isEnded && endedEntry.reason) rows.push(['Why', endedEntry.reason]);
  for (const [term, value] of rows) {
    const dt = document.createElement('dt'), dd = document.createElement('dd');
    dt.textContent = term;
    dd.textContent = value;
    if (term === 'Ends unwatched in') {
      dd.dataset.endsAt = new Date(Date.now() + Math.max(0, idleLimit - session.idleSeconds) * 1000).toISOString();
      dd.dataset.display = session.display;
      dd.dataset.idle = '1';
      dd.className = 'time-left';
      showTimeLeft(dd);
    }
    if (term === 'Time left') {
      dd.dataset.endsAt = job.endsAt;
      dd.dataset.display = session.display;
      dd.className = 'time-left';
      showTimeLeft(dd);
    }
    facts.append(dt, dd);
  }
  const actions = document.createElement('div');
  actions.className = 'actions';
  // A card's panel (a share, the viewer lines) outlives the card's redrawing on each change.
  let share = panels.get(session.id);
  if (!share) {
    share = document.createElement('div');
    share.className = 'share';
    panels.set(session.id, share);
  }
  const extra = [];
  if (isEnded) {
    const again = session.slurm ? Object.fromEntries(Object.entries({ partition: session.slurm.partition, time: session.slurm.timeLimit })
      .filter(([, v]) => v)) : null;
    actions.append(button('Start again', '', () => start(session.desktop, session.geometry, again,
                                                          identity && session.user !== identity.user ? session.user : null)),
                   button('Dismiss', 'secondary', () => { ended.delete(session.display); render(); }));
    if (endedEntry.lines.length) {
      const log = document.createElement('details');
      const summary = document.createElement('summary');
      summary.textContent = 'The last lines of its log';
      const pre = document.createElement('pre');
      pre.textContent = endedEntry.lines.join('\n');
      log.append(summary, pre);
      extra.push(log);
    }
  } else {
    actions.append(
      button('Open', '', () => openDesktop(session)),
      button('Share view-only', 'secondary', () => shareViewOnly(session, share)),
      button('VNC viewer', 'secondary', () => nativeViewer(session, share)),
      button('End', 'danger', () => end(session)));
    const room = job && cluster ? cluster.extendMaxSeconds - (job.extendedSeconds || 0) : 0;
    if (job && job.endsAt && room >= 60) {
      const by = Math.min(1800, room);
      actions.append(button('Extend ' + clock(by), 'secondary', () => extend(session, by)));
    }
  }
  article.append(title, facts, actions, share, ...extra);
  return article;
}

function render() {
  const cards = [...known.values()].sort((a, b) => a.display - b.display).map((s) => card(s, null))
    .concat([...ended.values()].map((e) => card(e.session, e)));
  $('cards').replaceChildren(...cards);
  $('no-desktops').hidden = cards.length > 0;
  const ready = [...known.values()].filter((s) => s.state === 'ready').length;
  document.title = (known.size ? '(' + ready + '/' + known.size + ' ready) ' : '') + 'Desktops';
}

async function refresh() {
  if (!identity) return;
  // An admin sees every user's desktops, as deskctl list --all shows them.
  const result = await request('list', identity.isAdmin ? { all: true } : {}, true);
  if (!result.ok) return;
  const now = new Map(result.answer.sessions.map((s) => [s.display, s]));
  for (const [display, session] of now) {
    const before = known.get(display);
    if (!before) announce('Desktop :' + display + ' is ' + stateText(session) + '.');
    else if (before.state !== session.state) announce('Desktop :' + display + ' is now ' + stateText(session) + '.');
  }
  for (const [display, session] of known) {
    if (!now.has(display)) {
      ended.set(display, { session, reason: null, lines: [] });
      announce('Desktop :' + display + ' has ended.');
      endedDetails(display, session);
    }
  }
  known = now;
  const alive = new Set([...now.values()].map((s) => s.id));
  for (const id of [...panels.keys()]) if (!alive.has(id)) panels.delete(id);
  render();
  const session = await api('/api/session');
  if (session.status === 401) loggedOut('Your login has ended; log in again.');
  else if (session.ok) touched(session.answer.identity.idleSeconds);
}

// Why an ended desktop ended, and the last lines its desktop wrote (deskctl logs).
async function endedDetails(display, session) {
  const result = await request('logs', { session: session.id, lines: 12 }, true);
  const entry = ended.get(display);
  if (!result.ok || !entry || entry.session.id !== session.id) return;
  entry.reason = result.answer.logs.session.endReason || null;
  const desktop = result.answer.logs.processes.find((p) => p.role === 'desktop');
  entry.lines = desktop ? desktop.lines : [];
  render();
}

// A start: the form's choices, or (Start again) an ended desktop's own.
async function start(desktop, geometry, slurm, user) {
  $('desktops-error').textContent = '';
  $('start-submit').disabled = true;
  announce('Starting a desktop…');
  try {
    const fields = {};
    if (desktop) fields.desktop = desktop;
    if (geometry) fields.geometry = geometry;
    if (slurm) fields.slurm = slurm;
    if (user) fields.user = user;
    const result = await request('start', fields);
    if (!result.ok) {
      $('desktops-error').textContent = message(result, 'The desktop did not start.');
      announce('The desktop did not start.');
      return;
    }
    const session = result.answer.sessions[0];
    ended.delete(session.display);
    announce('Desktop :' + session.display + ' started.');
    await refresh();
  } finally {
    $('start-submit').disabled = false;
  }
}

$('start-form').addEventListener('submit', (event) => {
  event.preventDefault();
  let slurm = null;
  if (cluster && $('start-where').value === 'cluster') {
    try { slurm = clusterFields(); } catch (error) {
      $('desktops-error').textContent = error.message;
      announce(error.message);
      return;
    }
  }
  const user = identity.isAdmin ? $('start-for').value.trim() : '';
  start($('start-desktop').value, $('start-geometry').value, slurm, user || null);
});

async function openDesktop(session) {
  // The tab opens now, on the click (a browser blocks one opened later), and goes to the
  // desktop once deskd has made its link; it gets no handle on this page.
  const tab = window.open('', '_blank');
  if (tab) tab.opener = null;
  const result = await request('url', { display: session.display, ttlSeconds: 60 });
  if (!result.ok) {
    if (tab) tab.close();
    return ($('desktops-error').textContent = message(result, 'The desktop could not be opened.'));
  }
  if (tab) tab.location.href = result.answer.link.url;
  else location.href = result.answer.link.url;
}

// Sharing: a view-only link, good once within 10 minutes, for anyone who holds it or only
// for named accounts (each logged in to this portal); then the desktop's shares, each of
// which can be taken back alone (deskctl url --shares, --revoke --share).
function shareViewOnly(session, place) {
  const form = document.createElement('form');
  const label = document.createElement('label');
  const names = document.createElement('input');
  names.id = 'share-for-' + session.display;
  names.name = 'viewers';
  names.autocomplete = 'off';
  names.spellcheck = false;
  names.placeholder = 'for example: bob, carol';
  label.htmlFor = names.id;
  label.textContent = 'Only for these accounts (empty: anyone with the link):';
  const make = document.createElement('button');
  make.type = 'submit';
  make.textContent = 'Make a view-only link';
  form.append(label, names, make);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const viewers = names.value.split(',').map((n) => n.trim()).filter((n) => n);
    const fields = { display: session.display, viewOnly: true, ttlSeconds: 600 };
    if (viewers.length) fields.viewers = viewers;
    const result = await request('url', fields);
    if (!result.ok) return ($('desktops-error').textContent = message(result, 'No link could be made.'));
    $('desktops-error').textContent = '';
    const linkLabel = document.createElement('label');
    const field = document.createElement('input');
    field.readOnly = true;
    field.value = result.answer.link.url;
    field.id = 'share-' + session.display;
    linkLabel.htmlFor = field.id;
    linkLabel.textContent = 'A view-only link, good once within 10 minutes' +
      (viewers.length ? ', for ' + viewers.join(', ') + ' logged in here:' : ':');
    place.replaceChildren(linkLabel, field);
    await listShares(session, place);
    field.select();
    announce('A view-only link to :' + session.display + ' is ready to copy.');
  });
  place.replaceChildren(form);
  listShares(session, place);
  names.focus();
}

async function listShares(session, place) {
  const result = await request('url', { display: session.display, shares: true }, true);
  if (!result.ok) return;
  place.querySelector('.shares')?.remove();
  const section = document.createElement('div');
  section.className = 'shares';
  if (result.answer.shares.length) {
    const heading = document.createElement('p');
    heading.textContent = 'Shared now:';
    const list = document.createElement('ul');
    for (const share of result.answer.shares) {
      const item = document.createElement('li');
      const who = share.viewers ? 'for ' + share.viewers.join(', ') : 'anyone with the link';
      const state = share.expiresAt ? 'not yet opened' : share.browsers + ' browser' + (share.browsers === 1 ? '' : 's');
      item.append((share.viewOnly ? 'View-only, ' : 'Full control, ') + who + ': ' + state + ' ',
        button('Take back', 'secondary', async () => {
          const taken = await request('url', { display: session.display, revoke: true, share: share.share });
          if (!taken.ok) return ($('desktops-error').textContent = message(taken, 'The share could not be taken back.'));
          announce('That share of :' + session.display + ' is taken back.');
          listShares(session, place);
        }));
      list.append(item);
    }
    section.append(heading, list, button('Take every link back', 'secondary', async () => {
      await request('url', { display: session.display, revoke: true });
      place.replaceChildren();
      announce('Every link to :' + session.display + ' is taken back.');
    }));
  }
  place.append(section);
}

// For those who use a native VNC viewer (a screen reader's, say) rather than noVNC: the
// ssh tunnel and the viewer's command line, as deskctl show prints them.
async function nativeViewer(session, place) {
  const result = await request('show', { display: session.display });
  if (!result.ok || !result.answer.connect) return ($('desktops-error').textContent = message(result, 'No connection hint for this desktop.'));
  const lines = [['An ssh tunnel to the desktop, from your machine', result.answer.connect.sshTunnel],
                 ['then a VNC viewer, with the password from deskctl passwd', result.answer.connect.viewer]];
  place.replaceChildren(...lines.map(([text, command], index) => {
    const label = document.createElement('label');
    const field = document.createElement('input');
    field.readOnly = true;
    field.value = command;
    field.id = 'native-' + session.display + '-' + index;
    label.htmlFor = field.id;
    label.textContent = text + ':';
    const wrap = document.createElement('p');
    wrap.append(label, field);
    return wrap;
  }));
  announce('How to reach :' + session.display + ' with a VNC viewer is shown on its card.');
}

async function end(session) {
  if (!window.confirm('End desktop :' + session.display + '? Its programs are closed and unsaved work is lost.')) return;
  const result = await request('kill', { display: session.display });
  if (!result.ok) return ($('desktops-error').textContent = message(result, 'The desktop did not end.'));
  announce('Desktop :' + session.display + ' ended.');
  await refresh();
}

// ---- Start: a login still alive shows the desktops, else the login form.
(async () => {
  try {
    const result = await api('/api/session');
    if (result.ok) return loggedIn(result.answer.identity);
  } catch (error) { /* shown as logged out */ }
  loggedOut('');
})();
