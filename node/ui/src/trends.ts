// Trends (content level 2 and up): a light SVG line per numeric point, from /api/history, then live.
import { api } from './api.ts';
import { el, enc, find, fmt } from './dom.ts';
import type { Device } from './model.ts';

const TREND_MS = 10 * 60 * 1000;
type Sample = [number, number];
const trends = new Map<string, Sample[]>();

export async function loadTrends(devices: Iterable<Device>): Promise<void> {
  for (const d of devices) {
    for (const [name, v] of Object.entries(d.points)) {
      if (typeof v !== 'number') continue;
      const r = await api<Sample[]>(`/api/history?device=${enc(d.id)}&point=${enc(name)}&since=${Date.now() - TREND_MS}`, { deadlineMs: 3000 });
      if (r.status === 200) trends.set(`${d.id}/${name}`, r.data);
      drawTrend(d, name);
    }
  }
}

export function trendSample(d: Device, name: string, t: number, v: number): void {
  const key = `${d.id}/${name}`;
  const s = trends.get(key) ?? [];
  const last = s.at(-1);
  if (!last || t > last[0]) s.push([t, v]);
  while (s.length && s[0]![0] < Date.now() - TREND_MS) s.shift();
  trends.set(key, s);
}

export function drawTrend(d: Device, name: string): void {
  const box = find(document, `#dev-${CSS.escape(d.id)} .trends`);
  if (!box) return;
  const s = trends.get(`${d.id}/${name}`) ?? [];
  let fig = find(box, `[data-trend="${CSS.escape(name)}"]`);
  if (!fig) {
    fig = el('figure', { 'data-trend': name });
    box.append(fig);
  }
  const W = 220;
  const H = 40;
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('width', String(W));
  svg.setAttribute('height', String(H));
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `${name} over the last 10 minutes`);
  const values = s.map((x) => x[1]);
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  if (s.length > 1) {
    const t0 = s[0]![0];
    const t1 = s.at(-1)![0];
    const x = (t: number) => (t1 > t0 ? ((t - t0) / (t1 - t0)) * (W - 2) + 1 : W / 2);
    const y = (v: number) => (hi > lo ? H - 3 - ((v - lo) / (hi - lo)) * (H - 6) : H / 2);
    const line = document.createElementNS(ns, 'polyline');
    line.setAttribute('points', s.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' '));
    svg.append(line);
  }
  const unit = d.units?.[name] ? ` ${d.units[name]}` : '';
  const range = s.length ? `${fmt(lo)}–${fmt(hi)}${unit}` : 'no samples yet';
  const csv = el('a', { href: `/api/history?device=${enc(d.id)}&point=${enc(name)}&format=csv`, download: `${d.id}-${name}.csv`, text: 'CSV' });
  fig.replaceChildren(svg, el('figcaption', {}, `${name} · ${range} · `, csv));
}
