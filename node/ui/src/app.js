'use strict';
// ews web UI. One source for every content level; the build strips what a level does not have.
(() => {
  const LEVEL = Number(document.documentElement.dataset.level);
  const $ = (s) => document.querySelector(s);
  const el = (tag, attrs = {}, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (v !== undefined && v !== false) e.setAttribute(k, v === true ? '' : v);
    }
    for (const k of kids) if (k !== undefined && k !== null && k !== false && k !== '') e.append(k);
    return e;
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const enc = encodeURIComponent;
  const state = { csrf: '', role: '', user: '', token: '', bases: [location.origin], base: 0, devices: new Map(), master: null, es: null };

  // One banner at a time. `kind` lets its cause clear it: 'reconnect' goes with the next answer,
  // 'info' (a new master) by itself after a while.
  let bannerKind = '';
  let bannerTimer;
  function banner(text, kind = 'reconnect') {
    const b = $('#banner');
    clearTimeout(bannerTimer);
    if (!text) {
      bannerKind = '';
      return void (b.hidden = true);
    }
    bannerKind = kind;
    b.textContent = text;
    b.hidden = false;
    if (kind === 'info') bannerTimer = setTimeout(() => banner(''), 10000);
  }
  const reconnected = () => bannerKind === 'reconnect' && banner('');

  // Idempotency keys without crypto.randomUUID (which plain-http pages on a LAN do not get).
  function newKey() {
    const a = new Uint8Array(16);
    crypto.getRandomValues(a);
    return Array.from(a, (x) => x.toString(16).padStart(2, '0')).join('');
  }

  const RETRY_CODES = new Set(['NO_MASTER', 'SHUTTING_DOWN', 'BOARD_FAILED', 'NO_BOARD']);
  const LOGIN_RETRY_CODES = new Set([...RETRY_CODES, 'QUEUE_FULL']);

  // Every call goes to the current board; if it cannot answer for the cluster (network error, no
  // master, its board failed), the next board the page knows. Retries keep the same Idempotency-Key.
  async function api(path, { method = 'GET', body, key, deadlineMs = 15000, retry = RETRY_CODES } = {}) {
    const until = Date.now() + deadlineMs;
    let attempt = 0;
    let last = { error: { code: 'UNREACHABLE', message: 'no board of the cluster answers' } };
    for (;;) {
      const base = state.bases[state.base % state.bases.length];
      const headers = {};
      if (body !== undefined) headers['content-type'] = 'application/json';
      if (method !== 'GET' && state.csrf) headers['x-csrf-token'] = state.csrf;
      if (key) headers['idempotency-key'] = key;
      if (state.token && base !== location.origin) headers.authorization = `Bearer ${state.token}`;
      try {
        // Each attempt may take as long as the server may (its request timeout is 10 s) when the
        // call's deadline allows: a slow command is not abandoned and re-sent.
        const perTry = Math.max(1000, Math.min(until - Date.now(), method === 'GET' ? 4000 : 11000));
        const r = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'include', signal: AbortSignal.timeout(perTry) });
        const data = await r.json().catch(() => ({}));
        if (r.status >= 502 && r.status <= 503 && retry.has(data.error && data.error.code)) {
          last = data;
          throw new Error('cluster busy');
        }
        reconnected();
        return { status: r.status, data, board: r.headers.get('x-ews-board'), replayed: r.headers.get('idempotent-replayed') === 'true' };
      } catch (e) {
        if (Date.now() > until) return { status: 0, data: last };
        state.base++;
        banner('Reconnecting to the cluster…');
        await sleep(Math.min(1000, 150 * ++attempt));
      }
    }
  }

  // ---- session ----

  async function start() {
    const r = await api('/api/session', { deadlineMs: 5000 });
    if (r.status === 200) return enter(r.data);
    showLogin();
  }

  function showLogin() {
    $('#app').hidden = true;
    $('#logout').hidden = true;
    $('#who').textContent = '';
    $('#login').hidden = false;
    if (state.es) state.es.close();
  }

  async function enter(s) {
    Object.assign(state, { csrf: s.csrf || '', role: s.role, user: s.user });
    if (s.token) state.token = s.token;
    $('#login').hidden = true;
    $('#app').hidden = false;
    $('#logout').hidden = !!s.open;
    $('#who').textContent = s.open ? 'login off' : `${s.user} (${s.role})`;
    await loadCluster();
    await loadDevices();
    await Promise.all([loadAlarms(), loadLog()]);
    connectEvents();
    /*level>=3*/ startChart(); /*/level*/
  }

  $('#login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = ev.target;
    const err = $('#login-error');
    err.textContent = '';
    // A board whose password checks are all taken (a flood of logins) is not the only one: try the next.
    const r = await api('/api/login', { method: 'POST', body: { name: f.name.value, password: f.password.value }, deadlineMs: 8000, retry: LOGIN_RETRY_CODES });
    if (r.status === 200) {
      f.password.value = '';
      return enter(r.data);
    }
    err.textContent = r.status === 401 ? 'Wrong name or password.' : r.status === 429 ? 'Too many attempts; wait a minute.' : (r.data.error && r.data.error.message) || 'Cannot log in.';
  });

  $('#logout').addEventListener('click', async () => {
    await api('/api/logout', { method: 'POST', deadlineMs: 3000 });
    Object.assign(state, { csrf: '', token: '', role: '' });
    showLogin();
  });

  // ---- cluster ----

  async function loadCluster() {
    const r = await api('/api/cluster');
    if (r.status === 200) renderCluster(r.data);
  }

  function renderCluster(c) {
    $('#cluster-name').textContent = c.cluster ? `· ${c.cluster}` : '';
    // Every board the page can fail over to, its own origin first.
    if (c.boards) state.bases = [...new Set([location.origin, ...c.boards.filter((b) => b.url).map((b) => b.url)])];
    if (state.master && c.master && c.master !== state.master) banner(`Master is now ${c.master} (term ${c.term}).`, 'info');
    state.master = c.master;
    $('#cluster-summary').textContent = c.master ? `master ${c.master} · term ${c.term}` : 'electing a master…';
    renderBoards(c);
    const tbody = $('#cluster-table tbody');
    tbody.replaceChildren(...c.boards.map((b) => el('tr', { class: `${b.role === 'master' ? 'master' : ''} ${b.runstate === -1 ? 'down' : ''}` },
      el('td', { text: b.id }), el('td', { text: b.role }), el('td', { text: String(b.linknum) }),
      el('td', { text: b.runstate === 1 ? 'running' : b.runstate === 0 ? 'joining' : 'down' }))));
  }

  // What an operator checks first: is each board up, and how it is doing.
  function uptime(s) {
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min`;
    if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
    return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
  }
  function renderBoards(c) {
    $('#board-table tbody').replaceChildren(...c.boards.map((b) => {
      const h = b.health;
      const state = b.runstate === -1 ? 'down' : b.role === 'master' ? 'up · master' : b.runstate === 1 ? 'up' : 'joining';
      const cells = h ? [`${h.cpuPct} %`, `${Math.round(h.rssBytes / 1048576)} MB`, uptime(h.uptimeS), h.tempC === null ? '–' : `${Math.round(h.tempC)} °C`, h.version] : ['–', '–', '–', '–', '–'];
      return el('tr', { class: `${b.runstate === -1 ? 'down' : ''} ${h && b.runstate !== -1 ? '' : 'stale'}`, 'data-board': b.id }, el('td', { text: b.id }), el('td', { text: state }), ...cells.map((t) => el('td', { text: t })));
    }));
  }

  function connectEvents() {
    if (state.es) state.es.close();
    const base = state.bases[state.base % state.bases.length];
    const es = new EventSource(`${base}/api/events`, { withCredentials: true });
    state.es = es;
    es.addEventListener('cluster', (e) => renderCluster(JSON.parse(e.data)));
    es.addEventListener('device', (e) => updateDevice(JSON.parse(e.data)));
    es.addEventListener('alarms', (e) => renderAlarms(JSON.parse(e.data)));
    es.addEventListener('log', (e) => addLog([JSON.parse(e.data)]));
    // (Re)connected, maybe to another board after a failover: catch up on what was missed.
    es.onopen = () => {
      reconnected();
      // (Trends exist from level 2 on: the text-only page has no loadTrends.)
      if (state.connectedOnce) void Promise.all([loadAlarms(), loadLog(), typeof loadTrends === 'function' ? loadTrends() : null]);
      state.connectedOnce = true;
    };
    es.onerror = () => {
      es.close();
      if (state.es !== es) return;
      state.base++;
      banner('Reconnecting to the cluster…');
      setTimeout(() => state.es === es && connectEvents(), 1000);
    };
  }

  // ---- alarms ----

  const when = (t) => new Date(t).toLocaleTimeString();
  async function loadAlarms() {
    const r = await api('/api/alarms');
    if (r.status === 200) renderAlarms(r.data);
  }
  function renderAlarms(list) {
    const active = list.filter((a) => a.active);
    const open = active.filter((a) => !a.acked);
    $('#alarm-count').textContent = active.length ? `(${active.length} active${open.length ? `, ${open.length} to acknowledge` : ''})` : '';
    if (open.length) banner(`⚠ ${open.map((a) => a.message).join(' · ')}`, 'alarm');
    else if (bannerKind === 'alarm') banner('');
    const canAck = state.role === 'operator' || state.role === 'admin';
    const items = active.map((a) => el('li', { class: `alarm ${a.severity} ${a.acked ? 'acked' : ''}`, 'data-alarm': a.id },
      el('span', { class: `sev ${a.severity}`, text: a.severity }), ' ', el('b', { text: a.message }),
      ` since ${when(a.since)}`, a.value !== null && a.kind === 'point' ? ` (value ${fmt(a.value)})` : '',
      a.acked ? el('small', { text: ` · acknowledged by ${a.acked.user} at ${when(a.acked.at)}` })
        : el('button', { type: 'button', class: 'secondary', 'data-ack': a.id, disabled: !canAck, onclick: (e) => ackAlarm(a.id, e.target) }, 'Acknowledge')));
    $('#alarm-list').replaceChildren(...(items.length ? items : [el('li', { class: 'none', text: 'No active alarms.' })]));
  }
  async function ackAlarm(id, button) {
    button.disabled = true;
    const r = await api(`/api/alarms/${enc(id)}/ack`, { method: 'POST', deadlineMs: 5000 });
    if (r.status !== 200) {
      button.disabled = false;
      banner(`Cannot acknowledge: ${r.data.error ? r.data.error.message : r.status}`, 'info');
    } else loadAlarms();
  }

  // ---- the event log ----

  const LOG_SHOWN = 50;
  const seenLog = new Set();
  async function loadLog() {
    const r = await api('/api/log');
    if (r.status === 200) addLog(r.data);
  }
  function addLog(entries) {
    const list = $('#log-list');
    for (const e of entries) {
      if (seenLog.has(e.id)) continue;
      seenLog.add(e.id);
      const li = el('li', { class: `log ${e.kind}`, 'data-kind': e.kind, 'data-at': String(e.at) },
        el('time', { text: when(e.at) }), ' ', el('span', { class: 'kind', text: e.kind }), ' ', e.user ? el('b', { text: e.user }) : '', e.user ? ' ' : '', e.text);
      // Newest first.
      const after = [...list.children].find((x) => Number(x.dataset.at) <= e.at);
      list.insertBefore(li, after || null);
    }
    while (list.children.length > LOG_SHOWN) list.lastElementChild.remove();
  }

  /*level>=2*/
  // ---- trends: a light SVG line per numeric point, from /api/history, then live ----
  const TREND_MS = 10 * 60 * 1000;
  const trends = new Map();
  async function loadTrends() {
    for (const d of state.devices.values()) {
      for (const [name, v] of Object.entries(d.points)) {
        if (typeof v !== 'number') continue;
        const r = await api(`/api/history?device=${enc(d.id)}&point=${enc(name)}&since=${Date.now() - TREND_MS}`, { deadlineMs: 3000 });
        if (r.status === 200) trends.set(`${d.id}/${name}`, r.data);
        drawTrend(d, name);
      }
    }
  }
  function trendSample(d, name, t, v) {
    const key = `${d.id}/${name}`;
    const s = trends.get(key) || [];
    if (!s.length || t > s[s.length - 1][0]) s.push([t, v]);
    while (s.length && s[0][0] < Date.now() - TREND_MS) s.shift();
    trends.set(key, s);
  }
  function drawTrend(d, name) {
    const box = $(`#dev-${CSS.escape(d.id)} .trends`);
    if (!box) return;
    const s = trends.get(`${d.id}/${name}`) || [];
    let fig = box.querySelector(`[data-trend="${CSS.escape(name)}"]`);
    if (!fig) {
      fig = el('figure', { 'data-trend': name });
      box.append(fig);
    }
    const W = 220, H = 40;
    const ns = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    svg.setAttribute('width', String(W));
    svg.setAttribute('height', String(H));
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', `${name} over the last 10 minutes`);
    if (s.length > 1) {
      const t0 = s[0][0], t1 = s[s.length - 1][0];
      const lo = Math.min(...s.map((x) => x[1])), hi = Math.max(...s.map((x) => x[1]));
      const x = (t) => (t1 > t0 ? ((t - t0) / (t1 - t0)) * (W - 2) + 1 : W / 2);
      const y = (v) => (hi > lo ? H - 3 - ((v - lo) / (hi - lo)) * (H - 6) : H / 2);
      const path = document.createElementNS(ns, 'polyline');
      path.setAttribute('points', s.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' '));
      svg.append(path);
    }
    const unit = d.units && d.units[name] ? ` ${d.units[name]}` : '';
    const range = s.length ? `${fmt(Math.min(...s.map((x) => x[1])))}–${fmt(Math.max(...s.map((x) => x[1])))}${unit}` : 'no samples yet';
    const csv = el('a', { href: `/api/history?device=${enc(d.id)}&point=${enc(name)}&format=csv`, download: `${d.id}-${name}.csv`, text: 'CSV' });
    fig.replaceChildren(svg, el('figcaption', {}, `${name} · ${range} · `, csv));
  }
  /*/level*/

  // ---- devices ----

  async function loadDevices() {
    const r = await api('/api/devices');
    if (r.status !== 200) return void ($('#device-list').textContent = `Cannot list devices: ${r.data.error ? r.data.error.message : r.status}`);
    $('#device-list').replaceChildren(...r.data.map((d) => {
      state.devices.set(d.id, d);
      return renderDevice(d);
    }));
    if (r.data.length === 0) $('#device-list').textContent = 'No devices configured.';
    /*level>=2*/ loadTrends(); /*/level*/
    // Devices nobody has read yet: read them once now.
    for (const d of r.data) if (d.online && Object.keys(d.points).length === 0) readDevice(d.id, $(`#dev-${CSS.escape(d.id)} .result`));
  }

  function fmt(v, unit) {
    if (typeof v === 'boolean') return v ? 'on' : 'off';
    if (typeof v === 'number') return `${Math.round(v * 100) / 100}${unit ? ` ${unit}` : ''}`;
    return String(v);
  }

  function renderPoints(d) {
    const names = Object.keys(d.points);
    if (names.length === 0) return el('div', { class: 'points', text: 'no reading yet' });
    // Separators in the text itself, so the text-only level (no CSS) reads as well as the others.
    const parts = names.flatMap((n, i) => [i ? ' · ' : '', el('span', {}, `${n} `, el('b', { 'data-point': n, text: fmt(d.points[n], d.units && d.units[n]) }))]);
    return el('div', { class: 'points' }, ...parts);
  }

  // A reading older than this is shown greyed as stale: three missed polls, or a minute when the
  // device is read only on demand.
  const staleAfter = (d) => (d.pollMs > 0 ? Math.max(3 * d.pollMs, 5000) : 60000);
  function ageText(d, now) {
    if (!d.online) return 'offline';
    if (!d.updatedAt) return 'never read';
    const s = Math.max(0, Math.round((now - d.updatedAt) / 1000));
    return s < 60 ? `read ${s} s ago` : `read ${Math.round(s / 60)} min ago`;
  }
  function markAge(d, box, now = Date.now()) {
    const stale = !d.online || !d.updatedAt || now - d.updatedAt > staleAfter(d);
    box.classList.toggle('stale', stale);
    box.querySelector('.age').textContent = ageText(d, now) + (d.online && d.updatedAt && stale ? ' (stale)' : '');
  }
  setInterval(() => {
    for (const d of state.devices.values()) {
      const box = $(`#dev-${CSS.escape(d.id)}`);
      if (box) markAge(d, box);
    }
  }, 1000);
  // A button that sets a fixed value shows whether the device is in that state (start: running on).
  const same = (a, b) => a === b || (typeof a === 'boolean' && Number(a) === b) || (typeof b === 'boolean' && Number(b) === a);
  function markStates(d, box) {
    for (const a of d.actions || []) {
      if (a.point === null || a.sets === null || a.sets === undefined) continue;
      const b = box.querySelector(`button[data-action="${CSS.escape(a.name)}"]`);
      if (b) b.setAttribute('aria-pressed', String(a.point in d.points && same(d.points[a.point], a.sets)));
    }
    // Setpoints follow the device until someone moves them.
    for (const input of box.querySelectorAll('input[data-point]')) {
      const v = d.points[input.dataset.point];
      if (input.dataset.touched !== '1' && typeof v === 'number') {
        input.value = String(v);
        input.nextElementSibling.textContent = String(v);
      }
    }
  }

  function renderDevice(d) {
    const result = el('p', { class: 'result', 'aria-live': 'polite' });
    const canControl = state.role === 'operator' || state.role === 'admin';
    const controls = [];
    const read = el('button', { type: 'button', class: 'secondary', onclick: () => readDevice(d.id, result) }, 'Read now');
    controls.push(read);
    for (const a of d.actions || []) {
      if (!a.input) {
        controls.push(el('button', { type: 'button', 'data-action': a.name, disabled: !canControl, title: canControl ? '' : 'viewers cannot control', onclick: (e) => press(d.id, a.name, undefined, result, e.target) }, a.name));
      } else if (a.input.type === 'boolean') {
        controls.push(el('button', { type: 'button', 'data-action': `${a.name}:on`, disabled: !canControl, onclick: (e) => press(d.id, a.name, true, result, e.target) }, `${a.name} on`));
        controls.push(el('button', { type: 'button', 'data-action': `${a.name}:off`, disabled: !canControl, onclick: (e) => press(d.id, a.name, false, result, e.target) }, `${a.name} off`));
      } else {
        const min = a.input.min ?? 0, max = a.input.max ?? 100;
        const now = a.point && typeof d.points[a.point] === 'number' ? d.points[a.point] : min;
        const input = el('input', { type: LEVEL >= 2 ? 'range' : 'number', min, max, step: 'any', value: String(now), 'aria-label': `${a.name} value`, disabled: !canControl, 'data-point': a.point || undefined });
        const shown = el('output', { text: String(now) });
        input.addEventListener('input', () => {
          shown.textContent = input.value;
          input.dataset.touched = '1';
        });
        const go = (e) => press(d.id, a.name, Number(input.value), result, e.target).then(() => (input.dataset.touched = ''));
        controls.push(el('span', {}, input, ' ', shown, ' ', el('button', { type: 'button', 'data-action': a.name, disabled: !canControl, onclick: go }, a.name)));
      }
    }
    const box = el('div', { class: 'device', id: `dev-${d.id}` },
      el('h3', {}, d.name || d.id, ' ', el('span', { class: `badge ${d.online ? '' : 'off'}`, text: d.online ? 'online' : 'offline' }), ' ', el('small', { text: `on ${d.boards.join(', ')}` }), ' ', el('small', { class: 'age' })),
      renderPoints(d), el('div', { class: 'trends' }), el('div', { class: 'actions' }, ...controls), result);
    markAge(d, box);
    markStates(d, box);
    return box;
  }

  function updateDevice(snap) {
    const d = state.devices.get(snap.id);
    if (!d) return;
    const wasOffline = !d.online;
    Object.assign(d, { online: snap.online, points: { ...d.points, ...snap.points }, updatedAt: Math.max(d.updatedAt || 0, snap.updatedAt || 0) || null });
    const box = $(`#dev-${CSS.escape(snap.id)}`);
    if (!box) return;
    box.querySelector('.points').replaceWith(renderPoints(d));
    /*level>=2*/
    if (snap.updatedAt) for (const [name, v] of Object.entries(snap.points || {})) if (typeof v === 'number') {
      trendSample(d, name, snap.updatedAt, v);
      drawTrend(d, name);
    }
    /*/level*/
    const badge = box.querySelector('.badge');
    badge.textContent = d.online ? 'online' : 'offline';
    badge.className = `badge ${d.online ? '' : 'off'}`;
    // The device is back: an error it caused is no longer true.
    const result = box.querySelector('.result');
    if (wasOffline && d.online && result.classList.contains('bad')) show(result, true, '');
    markAge(d, box);
    markStates(d, box);
  }

  async function readDevice(id, result) {
    const r = await api(`/cgi-bin/devices/${enc(id)}`);
    if (r.status === 200) updateDevice({ id, online: true, points: r.data.result, updatedAt: Date.now() });
    else show(result, false, `✗ ${r.status || 'no answer'}: ${r.data.error ? r.data.error.message : ''}`);
  }

  function show(result, ok, text) {
    result.className = `result ${ok ? 'ok' : 'bad'}`;
    result.textContent = text;
  }

  // One key per press: retries of this press (failover) run it at most once.
  async function press(id, action, value, result, button) {
    const key = newKey();
    button.disabled = true;
    result.className = 'result';
    result.textContent = `${action}…`;
    const r = await api(`/cgi-bin/devices/${enc(id)}/${enc(action)}`, { method: 'POST', body: value === undefined ? undefined : { value }, key, deadlineMs: 20000 });
    button.disabled = false;
    if (r.status === 200) {
      const res = r.data.result || {};
      const what = Object.entries(res).map(([k, v]) => `${k} = ${fmt(v)}`).join(', ');
      show(result, true, `✓ ${action}${what ? `: ${what}` : ''} · ran on ${r.data.board} in ${r.data.ms} ms${r.replayed ? ' · replayed' : ''}`);
      await readDevice(id, result);
    } else {
      show(result, false, `✗ ${action}: ${r.status || 'no answer'} ${r.data.error ? r.data.error.message : ''}`);
    }
  }

  // The master's QoS controllers, in a line (SPEC §7).
  function renderQos(q) {
    if (!q) return;
    const parts = [`scheduler ${q.scheduler}`];
    if (q.G !== undefined) parts.push(`content level G ${q.G} (U ${q.U})`);
    if (q.weights) parts.push(`weights ${q.weights.join('/')}`);
    if (q.cf) parts.push(`µ-patterns ${q.patterns.join(' ')} CF ${q.cf.join('/')}`);
    if (q.proQoS) parts.push(`proQoS ${q.proQoS.join('/')}`);
    if (q.admission) parts.push(`target_in ${q.admission.map((a) => a.targetIn ?? '∞').join('/')} p ${q.admission.map((a) => a.p).join('/')}`);
    if (q.quotas) parts.push(`quotas ${q.quotas.join('/')}`);
    $('#qos').textContent = `QoS: ${parts.join(' · ')}`;
  }

  /*level>=3*/
  // ---- chart: requests per second per class, and queue length, over the last minutes ----
  const history = [];
  let chartTimer;
  function startChart() {
    if (chartTimer) return;
    const tick = async () => {
      const r = await api('/api/stats', { deadlineMs: 1500 });
      if (r.status === 200) {
        renderQos(r.data.qos);
        history.push(r.data);
        while (history.length > 150) history.shift();
        drawChart();
      }
    };
    tick();
    chartTimer = setInterval(tick, 2000);
  }
  function drawChart() {
    const cv = $('#chart');
    const g = cv.getContext('2d');
    const W = cv.width, H = cv.height, pad = 28;
    g.clearRect(0, 0, W, H);
    if (history.length < 2) return;
    const names = history[history.length - 1].classes.map((c) => c.name);
    const series = names.map((n) => history.slice(1).map((h, i) => {
      const prev = history[i].classes.find((c) => c.name === n), cur = h.classes.find((c) => c.name === n);
      const dt = (h.at - history[i].at) / 1000;
      return prev && cur && dt > 0 ? Math.max(0, (cur.served - prev.served) / dt) : 0;
    }));
    const queue = history.slice(1).map((h) => h.classes.reduce((n, c) => n + c.queued, 0));
    const top = Math.max(1, ...series.flat(), ...queue);
    const x = (i) => pad + (i * (W - pad - 6)) / Math.max(1, queue.length - 1);
    const y = (v) => H - pad + 4 - (v / top) * (H - pad - 10);
    g.strokeStyle = '#d9dee5';
    g.fillStyle = '#5f6b7a';
    g.font = '11px system-ui';
    g.beginPath();
    g.moveTo(pad, 6); g.lineTo(pad, H - pad + 4); g.lineTo(W - 6, H - pad + 4);
    g.stroke();
    g.fillText(String(Math.round(top)), 2, 14);
    g.fillText('0', 14, H - pad + 4);
    g.fillText(`last ${Math.round((history[history.length - 1].at - history[0].at) / 1000)} s`, W - 80, H - 8);
    const colors = ['#0b63c5', '#1b7f3b', '#8a4fff', '#b3261e'];
    const line = (vals, color, dash) => {
      g.strokeStyle = color;
      g.setLineDash(dash ? [5, 4] : []);
      g.lineWidth = 2;
      g.beginPath();
      vals.forEach((v, i) => (i ? g.lineTo(x(i), y(v)) : g.moveTo(x(i), y(v))));
      g.stroke();
    };
    series.forEach((s, i) => line(s, colors[i % colors.length], false));
    line(queue, '#e8710a', true);
    g.setLineDash([]);
    $('#chart-legend').textContent = `${names.map((n, i) => `${n} ${['blue', 'green', 'purple', 'red'][i % 4]}`).join(' · ')} (requests/s) · queue length orange, dashed`;
  }
  /*/level*/

  start();
})();
