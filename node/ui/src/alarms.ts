// Active alarms, with an Acknowledge button for operators; and the event log, newest first.
import { api, canControl, errorText } from './api.ts';
import { $, banner, bannerShows, el, enc, fmt, when } from './dom.ts';
import type { Alarm, LogEntry } from './model.ts';

export async function loadAlarms(): Promise<void> {
  const r = await api<Alarm[]>('/api/alarms');
  if (r.status === 200) renderAlarms(r.data);
}

export function renderAlarms(list: readonly Alarm[]): void {
  const active = list.filter((a) => a.active);
  const open = active.filter((a) => !a.acked);
  $('#alarm-count').textContent = active.length ? `(${active.length} active${open.length ? `, ${open.length} to acknowledge` : ''})` : '';
  if (open.length) banner(`⚠ ${open.map((a) => a.message).join(' · ')}`, 'alarm');
  else if (bannerShows('alarm')) banner('');
  const items = active.map((a) =>
    el(
      'li',
      { class: `alarm ${a.severity} ${a.acked ? 'acked' : ''}`, 'data-alarm': a.id },
      el('span', { class: `sev ${a.severity}`, text: a.severity }),
      ' ',
      el('b', { text: a.message }),
      ` since ${when(a.since)}`,
      a.value !== null && a.kind === 'point' ? ` (value ${fmt(a.value)})` : '',
      a.acked
        ? el('small', { text: ` · acknowledged by ${a.acked.user} at ${when(a.acked.at)}` })
        : el('button', { type: 'button', class: 'secondary', 'data-ack': a.id, disabled: !canControl(), onclick: (e) => ackAlarm(a.id, e.target as HTMLButtonElement) }, 'Acknowledge'),
    ),
  );
  $('#alarm-list').replaceChildren(...(items.length ? items : [el('li', { class: 'none', text: 'No active alarms.' })]));
}

async function ackAlarm(id: string, button: HTMLButtonElement): Promise<void> {
  button.disabled = true;
  const r = await api(`/api/alarms/${enc(id)}/ack`, { method: 'POST', deadlineMs: 5000 });
  if (r.status !== 200) {
    button.disabled = false;
    banner(`Cannot acknowledge: ${errorText(r) || r.status}`, 'info');
  } else void loadAlarms();
}

const LOG_SHOWN = 50;
const seenLog = new Set<string>();

export async function loadLog(): Promise<void> {
  const r = await api<LogEntry[]>('/api/log');
  if (r.status === 200) addLog(r.data);
}

export function addLog(entries: readonly LogEntry[]): void {
  const list = $('#log-list');
  for (const e of entries) {
    if (seenLog.has(e.id)) continue;
    seenLog.add(e.id);
    const li = el(
      'li',
      { class: `log ${e.kind}`, 'data-kind': e.kind, 'data-at': String(e.at) },
      el('time', { text: when(e.at) }),
      ' ',
      el('span', { class: 'kind', text: e.kind }),
      ' ',
      e.user ? el('b', { text: e.user }) : '',
      e.user ? ' ' : '',
      e.text,
    );
    // Newest first.
    const after = [...list.children].find((x) => Number((x as HTMLElement).dataset.at) <= e.at);
    list.insertBefore(li, after ?? null);
  }
  while (list.children.length > LOG_SHOWN) list.lastElementChild?.remove();
}
