// Devices: their points, how fresh they are, and a button or slider per action.
import { api, canControl, errorText } from './api.ts';
import { $, el, enc, find, fmt, newKey } from './dom.ts';
import type { Device, DeviceSnapshot, Value } from './model.ts';
import { drawTrend, loadTrends, trendSample } from './trends.ts';

export const devices = new Map<string, Device>();
const box = (id: string) => find(document, `#dev-${CSS.escape(id)}`);

export async function loadDevices(): Promise<void> {
  const r = await api<Device[]>('/api/devices');
  const list = $('#device-list');
  if (r.status !== 200) {
    list.textContent = `Cannot list devices: ${errorText(r) || r.status}`;
    return;
  }
  list.replaceChildren(
    ...r.data.map((d) => {
      devices.set(d.id, d);
      return renderDevice(d);
    }),
  );
  if (r.data.length === 0) list.textContent = 'No devices configured.';
  if (EWS_LEVEL >= 2) void loadTrends(devices.values());
  // Devices nobody has read yet: read them once now.
  for (const d of r.data) {
    const result = find(document, `#dev-${CSS.escape(d.id)} .result`);
    if (d.online && Object.keys(d.points).length === 0 && result) void readDevice(d.id, result);
  }
}

function renderPoints(d: Device): HTMLElement {
  const names = Object.keys(d.points);
  if (names.length === 0) return el('div', { class: 'points', text: 'no reading yet' });
  // Separators in the text itself, so the text-only level (no CSS) reads as well as the others.
  const parts = names.flatMap((n, i) => [i ? ' · ' : '', el('span', {}, `${n} `, el('b', { 'data-point': n, text: fmt(d.points[n], d.units?.[n]) }))]);
  return el('div', { class: 'points' }, ...parts);
}

/** Maintenance (every board it is on is drained) before online or offline: its commands wait for an admin. */
const badgeText = (d: Device) => (d.maintenance ? 'maintenance' : d.online ? 'online' : 'offline');
// A reading older than this is shown greyed as stale: three missed polls, or a minute when the
// device is read only on demand.
const staleAfter = (d: Device) => (d.pollMs > 0 ? Math.max(3 * d.pollMs, 5000) : 60000);
function ageText(d: Device, now: number): string {
  if (!d.online) return badgeText(d);
  if (!d.updatedAt) return 'never read';
  const s = Math.max(0, Math.round((now - d.updatedAt) / 1000));
  return s < 60 ? `read ${s} s ago` : `read ${Math.round(s / 60)} min ago`;
}
function markAge(d: Device, b: HTMLElement, now = Date.now()): void {
  const stale = !d.online || !d.updatedAt || now - d.updatedAt > staleAfter(d);
  b.classList.toggle('stale', stale);
  const age = find(b, '.age');
  if (age) age.textContent = ageText(d, now) + (d.online && d.updatedAt && stale ? ' (stale)' : '');
}
setInterval(() => {
  for (const d of devices.values()) {
    const b = box(d.id);
    if (b) markAge(d, b);
  }
}, 1000);

// A button that sets a fixed value shows whether the device is in that state (start: running on).
const same = (a: Value | undefined, b: Value) => a === b || (typeof a === 'boolean' && Number(a) === b) || (typeof b === 'boolean' && Number(b) === a);
function markStates(d: Device, b: HTMLElement): void {
  for (const a of d.actions ?? []) {
    if (a.point === null || a.sets === null || a.sets === undefined) continue;
    const button = find(b, `button[data-action="${CSS.escape(a.name)}"]`);
    if (button) button.setAttribute('aria-pressed', String(a.point in d.points && same(d.points[a.point], a.sets)));
  }
  // Setpoints follow the device until someone moves them.
  for (const input of b.querySelectorAll<HTMLInputElement>('input[data-point]')) {
    const v = d.points[input.dataset.point ?? ''];
    if (input.dataset.touched !== '1' && typeof v === 'number') {
      input.value = String(v);
      if (input.nextElementSibling) input.nextElementSibling.textContent = String(v);
    }
  }
}

function renderDevice(d: Device): HTMLElement {
  const result = el('p', { class: 'result', 'aria-live': 'polite' });
  const can = canControl();
  const target = (e: Event) => e.target as HTMLButtonElement;
  const controls: HTMLElement[] = [el('button', { type: 'button', class: 'secondary', onclick: () => readDevice(d.id, result) }, 'Read now')];
  for (const a of d.actions ?? []) {
    if (!a.input) {
      controls.push(
        el('button', { type: 'button', 'data-action': a.name, disabled: !can, title: can ? '' : 'viewers cannot control', onclick: (e) => press(d.id, a.name, undefined, result, target(e)) }, a.name),
      );
    } else if (a.input.type === 'boolean') {
      controls.push(el('button', { type: 'button', 'data-action': `${a.name}:on`, disabled: !can, onclick: (e) => press(d.id, a.name, true, result, target(e)) }, `${a.name} on`));
      controls.push(el('button', { type: 'button', 'data-action': `${a.name}:off`, disabled: !can, onclick: (e) => press(d.id, a.name, false, result, target(e)) }, `${a.name} off`));
    } else {
      const min = a.input.min ?? 0;
      const max = a.input.max ?? 100;
      const v = a.point ? d.points[a.point] : undefined;
      const now = typeof v === 'number' ? v : min;
      const input = el('input', {
        type: EWS_LEVEL >= 2 ? 'range' : 'number',
        min,
        max,
        step: 'any',
        value: String(now),
        'aria-label': `${a.name} value`,
        disabled: !can,
        'data-point': a.point ?? undefined,
      });
      const shown = el('output', { text: String(now) });
      input.addEventListener('input', () => {
        shown.textContent = input.value;
        input.dataset.touched = '1';
      });
      const go = (e: Event) =>
        press(d.id, a.name, Number(input.value), result, target(e)).then(() => {
          input.dataset.touched = '';
        });
      controls.push(el('span', {}, input, ' ', shown, ' ', el('button', { type: 'button', 'data-action': a.name, disabled: !can, onclick: go }, a.name)));
    }
  }
  const online = el('span', { class: `badge ${d.online && !d.maintenance ? '' : 'off'}`, text: badgeText(d) });
  const b = el(
    'div',
    { class: 'device', id: `dev-${d.id}` },
    el('h3', {}, d.name || d.id, ' ', online, ' ', el('small', { text: `on ${d.boards.join(', ')}` }), ' ', el('small', { class: 'age' })),
    renderPoints(d),
    el('div', { class: 'trends' }),
    el('div', { class: 'actions' }, ...controls),
    result,
  );
  markAge(d, b);
  markStates(d, b);
  return b;
}

export function updateDevice(snap: DeviceSnapshot): void {
  const d = devices.get(snap.id);
  if (!d) return;
  const wasOffline = !d.online;
  Object.assign(d, { online: snap.online, points: { ...d.points, ...snap.points }, updatedAt: Math.max(d.updatedAt ?? 0, snap.updatedAt ?? 0) || null });
  const b = box(snap.id);
  if (!b) return;
  find(b, '.points')?.replaceWith(renderPoints(d));
  if (EWS_LEVEL >= 2 && snap.updatedAt) {
    for (const [name, v] of Object.entries(snap.points ?? {})) {
      if (typeof v !== 'number') continue;
      trendSample(d, name, snap.updatedAt, v);
      drawTrend(d, name);
    }
  }
  const badge = find(b, '.badge');
  if (badge) {
    badge.textContent = badgeText(d);
    badge.className = `badge ${d.online && !d.maintenance ? '' : 'off'}`;
  }
  // The device is back: an error it caused is no longer true.
  const result = find(b, '.result');
  if (result && wasOffline && d.online && result.classList.contains('bad')) show(result, true, '');
  markAge(d, b);
  markStates(d, b);
}

async function readDevice(id: string, result: HTMLElement): Promise<void> {
  const r = await api<{ result: Record<string, Value> }>(`/cgi-bin/devices/${enc(id)}`);
  if (r.status === 200) updateDevice({ id, online: true, points: r.data.result, updatedAt: Date.now() });
  else show(result, false, `✗ ${r.status || 'no answer'}: ${errorText(r)}`);
}

function show(result: HTMLElement, ok: boolean, text: string): void {
  result.className = `result ${ok ? 'ok' : 'bad'}`;
  result.textContent = text;
}

// One key per press: retries of this press (failover) run it at most once.
async function press(id: string, action: string, value: Value | undefined, result: HTMLElement, button: HTMLButtonElement): Promise<void> {
  const key = newKey();
  button.disabled = true;
  result.className = 'result';
  result.textContent = `${action}…`;
  const r = await api<{ result?: Record<string, Value>; board: string; ms: number }>(`/cgi-bin/devices/${enc(id)}/${enc(action)}`, {
    method: 'POST',
    body: value === undefined ? undefined : { value },
    key,
    deadlineMs: 20000,
  });
  button.disabled = false;
  if (r.status === 200) {
    const what = Object.entries(r.data.result ?? {})
      .map(([k, v]) => `${k} = ${fmt(v)}`)
      .join(', ');
    show(result, true, `✓ ${action}${what ? `: ${what}` : ''} · ran on ${r.data.board} in ${r.data.ms} ms${r.replayed ? ' · replayed' : ''}`);
    await readDevice(id, result);
  } else {
    show(result, false, `✗ ${action}: ${r.status || 'no answer'} ${errorText(r)}`);
  }
}
