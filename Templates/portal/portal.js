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
  // While the file view is open the page behind it is inert, its live region too.
  $($('files-view').open ? 'files-live' : 'announce').textContent = text;
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
  closeFiles();
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
    const forUser = identity && session.user !== identity.user ? session.user : null;
    actions.append(button('Start again', '', () => start(session.desktop, session.geometry, again, forUser,
                                                          !again && !forUser && $('start-open').checked ? openViewer() : null)),
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
      button('VNC viewer', 'secondary', () => nativeViewer(session, share)));
    // Files are the owner's alone (an admin sees others' cards, not their files).
    if (isOwn(session) && RUNNING.has(session.state)) {
      actions.append(button('Files', 'secondary files', () => openFiles(session)));
      cardDrops(article, session);
    }
    actions.append(button('End', 'danger', () => end(session)));
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

// A start: the form's choices, or (Start again) an ended desktop's own. `tab` is the viewer
// the click opened (Open it when it starts), which shows the desktop once it is ready.
async function start(desktop, geometry, slurm, user, tab) {
  $('desktops-error').textContent = '';
  $('start-submit').disabled = true;
  announce('Starting a desktop…');
  try {
    const fields = {};
    if (desktop) fields.desktop = desktop;
    if (geometry) fields.geometry = geometry;
    if (slurm) fields.slurm = slurm;
    if (user) fields.user = user;
    // A start whose tab is open asks for the desktop's link with it: one request, not two.
    // deskd refuses such a start, before starting anything, where no link can be made (desktops
    // on TCP without a VNC password, a user's links all unused): the desktop is then started
    // without one, and the tab closes with the reason why.
    let result = await request('start', tab ? Object.assign({ web: true, ttlSeconds: 60 }, fields) : fields)
      .catch(() => ({ ok: false, answer: {} }));
    const code = result.answer && result.answer.error && result.answer.error.code;
    if (tab && !result.ok && (code === 'gateway-off' || code === 'limit-reached')) {
      tab.close();
      tab = null;
      $('desktops-error').textContent = message(result, '') + ' The desktop starts without opening.';
      result = await request('start', fields).catch(() => ({ ok: false, answer: {} }));
    }
    if (!result.ok) {
      if (tab) tab.close();
      $('desktops-error').textContent = message(result, 'The desktop did not start.');
      announce('The desktop did not start.');
      return;
    }
    const session = result.answer.sessions[0];
    ended.delete(session.display);
    announce('Desktop :' + session.display + ' started.');
    if (tab && session.state === 'ready' && result.answer.link) hand(tab, result.answer.link.url, session);
    else if (tab && session.state === 'ready') showIn(tab, session);
    else if (tab) tab.close();
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
  // One's own desktop on this host opens in the same click: the viewer loads while it starts.
  const tab = !slurm && !user && $('start-open').checked ? openViewer() : null;
  start($('start-desktop').value, $('start-geometry').value, slurm, user || null, tab);
});

// Whether a start opens its desktop is the browser's own choice, kept across visits (where
// the browser keeps anything: without storage it is checked each time).
try { $('start-open').checked = localStorage.getItem('deskd.startOpens') !== '0'; } catch (error) { /* no storage */ }
$('start-open').addEventListener('change', () => {
  try { localStorage.setItem('deskd.startOpens', $('start-open').checked ? '1' : '0'); } catch (error) { /* no storage */ }
});

// noVNC's page as the click opens it, before the desktop has its link (/deskd-viewer.js in that
// page waits for it). The tab opens now, on the click (a browser blocks one opened later), and
// gets no handle on this page.
const WAITING_VIEWER = '/vnc.html#resize=remote&reconnect=0&path=websockify&view_only=0&deskd_wait=1';
function openViewer() {
  const tab = window.open(WAITING_VIEWER, '_blank');
  if (tab) tab.opener = null;
  else announce('The browser did not open a new tab; Open on the desktop\'s card shows it.');
  return tab;
}

// A link to the desktop, handed to the viewer `tab` in its fragment: the token (which the page
// trades for the gateway's cookie and drops from its address at once) and, for one's own
// desktop, which desktop it shows (its page takes dropped files, drop.js). A tab still on its
// first blank page is sent to the viewer with both.
async function showIn(tab, session) {
  if (tab.closed) return;
  const result = await request('url', { display: session.display, ttlSeconds: 60 }).catch(() => ({ ok: false, answer: {} }));
  if (!result.ok) {
    tab.close();
    return ($('desktops-error').textContent = message(result, 'The desktop could not be opened.'));
  }
  hand(tab, result.answer.link.url, session);
}

function hand(tab, link, session) {
  if (tab.closed) return;
  const token = new URLSearchParams(new URL(link).hash.slice(1)).get('token') || '';
  const handed = 'deskd_token=' + encodeURIComponent(token) + (isOwn(session) ? '&deskd_session=' + encodeURIComponent(session.id) : '');
  // replace: no entry of the tab's history holds the token, even for a moment.
  try {
    if (tab.location.pathname === '/vnc.html') {
      tab.location.replace('/vnc.html#' + WAITING_VIEWER.split('#')[1] + '&' + handed);
      return;
    }
  } catch (error) { /* not this origin's page (yet): sent there below */ }
  tab.location.replace(WAITING_VIEWER + '&' + handed);
}

async function openDesktop(session) {
  const tab = openViewer();
  if (tab) return showIn(tab, session);
  // No tab (a browser that refuses new ones): the link, in this one.
  const result = await request('url', { display: session.display, ttlSeconds: 60 });
  if (!result.ok) return ($('desktops-error').textContent = message(result, 'The desktop could not be opened.'));
  location.href = result.answer.link.url + (isOwn(session) ? '&session=' + encodeURIComponent(session.id) : '');
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

// ---- Files: a desktop owner's home, through the portal's file calls (each carried out as
// the owner, so the file system's permissions decide). One view, for one desktop at a time;
// its uploads go on when it is closed.

// The states in which a desktop is there to reach files through: an unresponsive one too,
// whose files may be just what its owner wants to rescue.
const RUNNING = new Set(['ready', 'unresponsive']);
const MOST_UPLOADS = 2;    // uploads under way at once; the rest wait their turn
const files = {
  session: null,           // the desktop whose files the view shows
  opener: null,            // the display whose card opened the view: focus goes back there
  path: '',                // the folder shown, relative to the home ('' is the home)
  entries: [], truncated: false,
  uploadFolder: '',        // the admin's default for uploads, named by every listing
  sort: 'name', descending: false,
  listing: 0,              // the latest listing asked for: an older answer arriving late is dropped
  queue: [], running: new Set(),
};

function isOwn(session) {
  if (!identity) return false;
  return session.uid !== undefined && identity.uid !== undefined ? session.uid === identity.uid : session.user === identity.user;
}

// Each query value encoded whole: a name may hold "&", "+", "#" or "?".
function filesURL(session, verb, fields) {
  const query = Object.entries(fields || {}).map(([key, value]) => key + '=' + encodeURIComponent(value)).join('&');
  return '/api/files/' + encodeURIComponent(session.id) + '/' + verb + (query ? '?' + query : '');
}

// Sizes in decimal units, as the speed's MB/s.
function bytes(n) {
  if (n < 1000) return n + (n === 1 ? ' byte' : ' bytes');
  const units = ['kB', 'MB', 'GB', 'TB', 'PB'];
  let value = n / 1000, unit = 0;
  while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit++; }
  return value.toFixed(1) + ' ' + units[unit];
}

const joinPath = (folder, name) => (folder ? folder + '/' + name : name);
const placeName = (folder) => (folder ? folder : 'your home folder');
const isFolder = (entry) => entry.type === 'directory' || (entry.type === 'link' && entry.target === 'directory');

function kind(entry) {
  if (entry.type === 'directory') return 'Folder';
  if (entry.type === 'file') return 'File';
  if (entry.type !== 'link') return 'Other (not a file or folder)';
  return { file: 'Link to a file', directory: 'Link to a folder' }[entry.target] || (entry.target ? 'Link to something else' : 'Link to nothing you can open');
}

function filesError(text) {
  $('files-error').textContent = text;
}

async function openFiles(session, list) {
  const view = $('files-view');
  const same = files.session && files.session.id === session.id;
  files.opener = session.display;
  if (!same) {
    files.session = session;
    files.path = '';
    $('files-title').textContent = 'Files of desktop :' + session.display;
    $('files-status').textContent = 'Listing your files…';
    $('files-path').replaceChildren();
    $('files-table').tBodies[0].replaceChildren();
    filesError('');
  }
  if (!view.open) {
    view.showModal();
    $('files-title').focus();
  }
  // A view opened again shows its folder as it is now.
  if (same) await listFolder(files.path); else await openAtStart();
  // Files dropped on the card go where the view opened: the upload folder, or the home.
  if (list && list.length) enqueue(list, files.path);
}

// The view opens at the admin's upload folder (the home's listing names it), shown empty when
// the user has none yet (the first upload there makes it), or at the home when it cannot be listed.
async function openAtStart() {
  const home = await fetchListing('');
  if (!home) return;
  if (!home.ok) return filesError(message(home, 'Your files could not be listed.'));
  files.uploadFolder = home.answer.uploadFolder || '';
  const start = files.uploadFolder ? await fetchListing(files.uploadFolder) : null;
  if (files.uploadFolder && !start) return;
  if (start && start.status === 404) {
    // Not made yet: shown empty, and the first upload into it makes it (deskd does, as the owner).
    showListing({ path: files.uploadFolder, entries: [], truncated: false });
    $('files-status').textContent = files.uploadFolder + ' does not exist yet: the first upload makes it.';
    return;
  }
  showListing(start && start.ok ? start.answer : home.answer);
}

// One folder's listing; null when a newer one was asked for meanwhile (that one is shown).
async function fetchListing(path) {
  const ticket = ++files.listing;
  const result = await api(filesURL(files.session, 'list', { path })).catch(() => ({ status: 0, ok: false, answer: {} }));
  return ticket === files.listing ? result : null;
}

// A folder opened (moved is true: by the person, whose focus goes to where they are now), or
// the one shown listed again.
async function listFolder(path, moved) {
  const result = await fetchListing(path);
  if (!result) return;
  if (!result.ok) return filesError(message(result, 'This folder could not be listed.'));
  showListing(result.answer, moved);
  if (moved) $('files-path').querySelector('[aria-current]').focus();
}

function showListing(answer, moved) {
  files.path = answer.path;
  files.entries = answer.entries;
  files.truncated = answer.truncated;
  if (answer.uploadFolder !== undefined) files.uploadFolder = answer.uploadFolder || '';
  filesError('');
  renderFiles();
  if (moved) announce($('files-status').textContent);
}

// Drawn anew on each listing; the control that had focus (a folder, a link, a crumb) keeps it.
function renderFiles() {
  const focused = $('files-view').contains(document.activeElement) ? document.activeElement.dataset.focusKey : undefined;
  const count = files.entries.length;
  $('files-status').textContent = (files.path || 'Home') + ': ' + count + (count === 1 ? ' entry' : ' entries') +
    (files.truncated ? ' (truncated: the folder holds more than are shown)' : '');
  $('files-path').replaceChildren(crumbs());
  for (const th of $('files-table').querySelectorAll('th[data-sort]')) {
    if (th.dataset.sort === files.sort) th.setAttribute('aria-sort', files.descending ? 'descending' : 'ascending');
    else th.removeAttribute('aria-sort');
  }
  $('files-table').tBodies[0].replaceChildren(...sortedEntries().map(entryRow));
  if (focused) $('files-view').querySelector('[data-focus-key="' + CSS.escape(focused) + '"]')?.focus();
}

// The path bar: Home, then each folder down to the one shown (aria-current), each a button.
function crumbs() {
  const parts = files.path ? files.path.split('/') : [];
  const list = document.createElement('ol');
  ['Home', ...parts].forEach((name, index) => {
    const item = document.createElement('li');
    const crumb = button(name, 'secondary', () => listFolder(parts.slice(0, index).join('/'), true));
    crumb.dataset.focusKey = 'crumb:' + index;
    if (index === parts.length) crumb.setAttribute('aria-current', 'location');
    item.append(crumb);
    list.append(item);
  });
  return list;
}

// Folders first, then by the column chosen; equals by name, as people count ("file 10" after "file 9").
function sortedEntries() {
  const key = { name: () => 0, size: (e) => (isFolder(e) ? 0 : e.size), modified: (e) => e.modified }[files.sort];
  const byName = (a, b) => a.name.localeCompare(b.name, undefined, { numeric: true, sensitivity: 'base' });
  const order = files.descending ? -1 : 1;
  return [...files.entries].sort((a, b) => (isFolder(b) - isFolder(a)) || order * ((key(a) - key(b)) || byName(a, b)));
}

function entryRow(entry) {
  const row = document.createElement('tr');
  row.dataset.name = entry.name;
  const path = joinPath(files.path, entry.name);
  const name = document.createElement('th');
  name.scope = 'row';
  if (isFolder(entry)) {
    const open = button(entry.name, 'link', () => listFolder(path, true));
    open.dataset.focusKey = 'open:' + entry.name;
    name.append(open);
  } else {
    name.textContent = entry.name;
  }
  const type = cell(kind(entry));
  const size = cell(isFolder(entry) ? '' : bytes(entry.size), 'number');
  const modified = cell('');
  if (entry.modified) {
    const time = document.createElement('time');
    time.dateTime = new Date(entry.modified * 1000).toISOString();
    time.textContent = new Date(entry.modified * 1000).toLocaleString();
    modified.append(time);
  }
  const download = cell('');
  if (entry.type === 'file' || entry.type === 'directory' || (entry.type === 'link' && entry.target)) download.append(downloadLink(entry, path));
  row.append(name, type, size, modified, download);
  return row;
}

function cell(text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

// A plain link: the browser downloads it itself (the login's cookie is enough), a folder as a .tar.
function downloadLink(entry, path) {
  const link = document.createElement('a');
  link.href = filesURL(files.session, 'download', { path });
  link.setAttribute('download', '');
  link.dataset.focusKey = 'get:' + entry.name;
  const which = document.createElement('span');
  which.className = 'visually-hidden';
  which.textContent = ' ' + entry.name;
  link.append(isFolder(entry) ? 'Download as archive' : 'Download', which);
  return link;
}

// ---- Uploads: a POST that makes the file, then a PUT of its bytes (the browser's progress events say how far),
// at most MOST_UPLOADS at once.

function enqueue(list, folder) {
  for (const file of list) files.queue.push(uploadRow(file, folder));
  announce(list.length + (list.length === 1 ? ' file' : ' files') + ' to upload into ' + placeName(folder) + '.');
  pump();
}

function uploadRow(file, folder) {
  const row = document.createElement('li');
  row.className = 'upload';
  row.dataset.name = file.name;
  const name = document.createElement('span');
  name.className = 'upload-name';
  name.textContent = file.name + ' (' + bytes(file.size) + ') into ' + placeName(folder);
  const bar = document.createElement('progress');
  bar.max = Math.max(1, file.size);
  bar.value = 0;
  bar.setAttribute('aria-label', 'Upload of ' + file.name);
  const status = document.createElement('span');
  status.className = 'upload-status';
  status.tabIndex = -1;      // where focus goes when the row's buttons go
  status.textContent = 'Waiting';
  const job = { file, folder, session: files.session, exists: 'ask', row, bar, status, xhr: null, done: false };
  job.cancel = button('Cancel', 'secondary cancel', () => cancelUpload(job));
  job.cancel.setAttribute('aria-label', 'Cancel the upload of ' + file.name);
  row.append(name, bar, status, job.cancel);
  $('files-uploads').append(row);
  return job;
}

function pump() {
  while (files.running.size < MOST_UPLOADS && files.queue.length) {
    const job = files.queue.shift();
    files.running.add(job);
    send(job).then(() => { files.running.delete(job); pump(); });
  }
}

// Settles once the upload has ended, however it ended. Two steps: the POST makes the file (as
// the owner, unnamed) or refuses with the reason (the name taken, the size, the disk, the
// limits) before a byte is sent; the PUT then carries the bytes to it.
async function send(job) {
  job.status.textContent = 'Starting';
  let begun, answer = {};
  try {
    begun = await fetch(filesURL(job.session, 'uploads'), {
      method: 'POST', credentials: 'same-origin', cache: 'no-store',
      headers: { 'Content-Type': 'application/json', 'X-Deskd-CSRF': identity.csrf },
      body: JSON.stringify({ folder: job.folder, name: job.file.name, size: job.file.size, exists: job.exists }),
    });
    answer = await begun.json().catch(() => ({}));
  } catch (error) {
    return finish(job, 'The portal could not be reached; try again.', true);
  }
  if (job.done) return;   // cancelled while the portal answered
  if (begun.status !== 201) return answered(job, { status: begun.status, responseText: JSON.stringify(answer) });
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    const started = performance.now();
    job.xhr = xhr;
    xhr.open('PUT', filesURL(job.session, 'uploads/' + encodeURIComponent(answer.upload)));
    xhr.setRequestHeader('X-Deskd-CSRF', identity.csrf);
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    xhr.upload.addEventListener('progress', (event) => progressed(job, event.loaded, started));
    xhr.upload.addEventListener('load', () => sent(job));
    xhr.addEventListener('load', () => answered(job, xhr));
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

// Every byte is on its way: a cancel now could come after the portal has stored the file,
// so there is none to offer (and "Cancelled" is never said of a file that is there).
function sent(job) {
  const hadFocus = job.cancel === document.activeElement;
  job.cancel.remove();
  job.status.textContent = 'All ' + bytes(job.file.size) + ' sent; the portal is storing it';
  if (hadFocus) job.status.focus();
}

function answered(job, xhr) {
  let answer = {};
  try { answer = JSON.parse(xhr.responseText); } catch (error) { /* not JSON: the status says it */ }
  const why = answer.error && answer.error.message;
  if (xhr.status === 201) {
    job.bar.value = job.bar.max;
    finish(job, 'Uploaded as ' + (answer.name || job.file.name));
    const folder = answer.folder !== undefined ? answer.folder : job.folder;
    if ($('files-view').open && files.session && files.session.id === job.session.id && folder === files.path) listFolder(files.path);
  } else if (xhr.status === 409 && job.exists === 'ask') {
    ask(job, why || 'A file of that name is there already: keep both, or replace it.');
  } else {
    finish(job, why || 'The upload failed (the portal answered ' + xhr.status + ').', true);
    if (xhr.status === 401) loggedOut('Your login has ended; log in again.');
  }
}

// The name is taken: the person chooses, and the upload goes back to the head of the queue.
function ask(job, sentence) {
  job.status.textContent = sentence;
  const choose = (exists) => () => {
    const hadFocus = job.row.contains(document.activeElement);
    for (const b of job.row.querySelectorAll('.keep-both, .replace')) b.remove();
    job.exists = exists;
    job.status.textContent = 'Waiting';
    if (hadFocus) job.cancel.focus();
    files.queue.unshift(job);
    pump();
  };
  const keep = button('Keep both', 'secondary keep-both', choose('keep'));
  keep.setAttribute('aria-label', 'Keep both: upload ' + job.file.name + ' under a new name');
  const replace = button('Replace', 'secondary replace', choose('replace'));
  replace.setAttribute('aria-label', 'Replace the ' + job.file.name + ' there with this one');
  job.row.append(keep, replace, job.cancel);
  announce(job.file.name + ': ' + sentence);
}

function cancelUpload(job) {
  if (job.done) return;
  if (job.xhr) return job.xhr.abort();   // its abort event finishes it
  files.queue = files.queue.filter((waiting) => waiting !== job);
  finish(job, 'Cancelled');
}

// The row's last word; its buttons go, and focus on one of them goes to the words.
function finish(job, text, failed) {
  if (job.done) return;
  const hadFocus = job.row.contains(document.activeElement);
  job.done = true;
  job.status.textContent = text;
  job.row.classList.add('done');
  if (failed) job.row.classList.add('failed');
  $('files-clear').hidden = false;
  for (const b of job.row.querySelectorAll('button')) b.remove();
  if (hadFocus) job.status.focus();
  announce(job.file.name + ': ' + text + (/[.!?]$/.test(text) ? '' : '.'));
}

// What was dropped: its files, and the names of any folders (a browser hands over no folder's
// files this way), which are said to be left out.
function dropped(transfer) {
  const list = [], folders = [];
  for (const item of Array.from(transfer.items)) {
    const entry = item.kind === 'file' && item.webkitGetAsEntry ? item.webkitGetAsEntry() : null;
    if (entry && entry.isDirectory) folders.push(entry.name);
    else if (item.kind === 'file' && item.getAsFile()) list.push(item.getAsFile());
  }
  const refuse = () => folders.length && filesError('Folders are not uploaded (' + folders.join(', ') + '); drop the files in them instead.');
  return { list, refuse };
}

const carriesFiles = (event) => event.dataTransfer && Array.from(event.dataTransfer.types).includes('Files');

// take(transfer) gets what was dropped, during the drop (a DataTransfer is empty after it).
function dropTarget(element, take) {
  element.addEventListener('dragover', (event) => {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'copy';
    element.classList.add('drop-over');
  });
  element.addEventListener('dragleave', (event) => {
    if (!element.contains(event.relatedTarget)) element.classList.remove('drop-over');
  });
  element.addEventListener('drop', (event) => {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    element.classList.remove('drop-over');
    take(event.dataTransfer);
  });
}

// A file dropped beside the targets would be opened by the browser, leaving the page (and
// ending its uploads): refused instead.
for (const type of ['dragover', 'drop']) {
  window.addEventListener(type, (event) => {
    if (!carriesFiles(event) || event.defaultPrevented) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = 'none';
  });
}

// A card of one's own takes files too: the view opens, and they go where it opened.
function cardDrops(article, session) {
  dropTarget(article, (transfer) => {
    const { list, refuse } = dropped(transfer);
    openFiles(session, list).then(refuse);
  });
}

// A login's end ends its uploads and closes its view: the next login may be someone else's.
function closeFiles() {
  files.queue = [];
  for (const job of files.running) job.xhr?.abort();
  $('files-uploads').replaceChildren();
  $('files-clear').hidden = true;
  files.session = null;
  if ($('files-view').open) $('files-view').close();
}

dropTarget($('files-view'), (transfer) => {
  const { list, refuse } = dropped(transfer);
  if (list.length) enqueue(list, files.path);
  refuse();
});
$('files-close').addEventListener('click', () => $('files-view').close());
$('files-view').addEventListener('close', () => {
  // Back to the Files button that opened the view (its card may have been drawn anew since).
  document.querySelector('article.card[data-display="' + files.opener + '"] button.files')?.focus();
});
$('files-pick').addEventListener('click', () => $('files-input').click());
$('files-clear').addEventListener('click', () => {
  // Only the rows that have said their last word: those under way or asking stay.
  for (const row of $('files-uploads').querySelectorAll('.upload.done')) row.remove();
  $('files-clear').hidden = true;
  $('files-pick').focus();
});
$('files-input').addEventListener('change', () => {
  const list = [...$('files-input').files];
  $('files-input').value = '';   // the same file may be picked again
  if (list.length) enqueue(list, files.path);
});
for (const th of $('files-table').querySelectorAll('th[data-sort]')) {
  th.querySelector('button').addEventListener('click', () => {
    files.descending = files.sort === th.dataset.sort ? !files.descending : false;
    files.sort = th.dataset.sort;
    renderFiles();
    announce('Sorted by ' + th.dataset.sort + (files.descending ? ', descending.' : ', ascending.'));
  });
}

// ---- Start: a login still alive shows the desktops, else the login form.
(async () => {
  try {
    const result = await api('/api/session');
    if (result.ok) return loggedIn(result.answer.identity);
  } catch (error) { /* shown as logged out */ }
  loggedOut('');
})();
