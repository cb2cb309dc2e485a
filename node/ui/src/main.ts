// ews web UI: one source for every content level; the build (deploy/site-bundle.ts) defines
// EWS_LEVEL per level and drops what a level does not have.

import { addLog, loadAlarms, loadLog, renderAlarms } from './alarms.ts';
import { api, currentBase, LOGIN_RETRY_CODES, session } from './api.ts';
import { startChart } from './chart.ts';
import { renderCluster } from './cluster-view.ts';
import { devices, loadDevices, updateDevice } from './devices.ts';
import { $, banner, reconnected } from './dom.ts';
import type { ClusterState } from './model.ts';
import { loadTrends } from './trends.ts';

interface SessionInfo {
  csrf?: string;
  role: string;
  user: string;
  token?: string;
  open?: boolean;
}

let events: EventSource | null = null;
let connectedOnce = false;

async function start(): Promise<void> {
  const r = await api<SessionInfo>('/api/session', { deadlineMs: 5000 });
  if (r.status === 200) return enter(r.data);
  showLogin();
}

function showLogin(): void {
  $('#app').hidden = true;
  $('#logout').hidden = true;
  $('#who').textContent = '';
  $('#login').hidden = false;
  events?.close();
}

async function enter(s: SessionInfo): Promise<void> {
  Object.assign(session, { csrf: s.csrf ?? '', role: s.role, user: s.user });
  if (s.token) session.token = s.token;
  $('#login').hidden = true;
  $('#app').hidden = false;
  $('#logout').hidden = !!s.open;
  $('#who').textContent = s.open ? 'login off' : `${s.user} (${s.role})`;
  await loadCluster();
  await loadDevices();
  await Promise.all([loadAlarms(), loadLog()]);
  connectEvents();
  if (EWS_LEVEL >= 3) startChart();
}

$('#login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const f = ev.target as HTMLFormElement;
  const name = f.elements.namedItem('name') as HTMLInputElement;
  const password = f.elements.namedItem('password') as HTMLInputElement;
  const err = $('#login-error');
  err.textContent = '';
  const r = await api<SessionInfo>('/api/login', { method: 'POST', body: { name: name.value, password: password.value }, deadlineMs: 8000, retry: LOGIN_RETRY_CODES });
  if (r.status === 200) {
    password.value = '';
    return enter(r.data);
  }
  err.textContent = r.status === 401 ? 'Wrong name or password.' : r.status === 429 ? 'Too many attempts; wait a minute.' : r.data.error?.message || 'Cannot log in.';
});

$('#logout').addEventListener('click', async () => {
  await api('/api/logout', { method: 'POST', deadlineMs: 3000 });
  Object.assign(session, { csrf: '', token: '', role: '' });
  showLogin();
});

async function loadCluster(): Promise<void> {
  const r = await api<ClusterState>('/api/cluster');
  if (r.status === 200) renderCluster(r.data);
}

function connectEvents(): void {
  events?.close();
  const es = new EventSource(`${currentBase()}/api/events`, { withCredentials: true });
  events = es;
  es.addEventListener('cluster', (e) => renderCluster(JSON.parse(e.data)));
  es.addEventListener('device', (e) => updateDevice(JSON.parse(e.data)));
  es.addEventListener('alarms', (e) => renderAlarms(JSON.parse(e.data)));
  es.addEventListener('log', (e) => addLog([JSON.parse(e.data)]));
  // (Re)connected, maybe to another board after a failover: catch up on what was missed.
  es.onopen = () => {
    reconnected();
    if (connectedOnce) void Promise.all([loadAlarms(), loadLog(), EWS_LEVEL >= 2 ? loadTrends(devices.values()) : null]);
    connectedOnce = true;
  };
  es.onerror = () => {
    es.close();
    if (events !== es) return;
    session.base++;
    banner('Reconnecting to the cluster…');
    setTimeout(() => events === es && connectEvents(), 1000);
  };
}

void start();
