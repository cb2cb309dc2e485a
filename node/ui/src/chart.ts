// The chart (content level 3): requests per second per class, and queue length, over the last minutes.
import { api } from './api.ts';
import { renderQos } from './cluster-view.ts';
import { $ } from './dom.ts';
import type { Stats } from './model.ts';

const POINTS_MAX = 150;
const history: Stats[] = [];
let chartTimer: ReturnType<typeof setInterval> | undefined;

export function startChart(): void {
  if (chartTimer) return;
  const tick = async () => {
    const r = await api<Stats>('/api/stats', { deadlineMs: 1500 });
    if (r.status !== 200) return;
    renderQos(r.data.qos);
    history.push(r.data);
    while (history.length > POINTS_MAX) history.shift();
    drawChart();
  };
  void tick();
  chartTimer = setInterval(tick, 2000);
}

function drawChart(): void {
  const cv = $<HTMLCanvasElement>('#chart');
  const g = cv.getContext('2d');
  if (!g) return;
  const W = cv.width;
  const H = cv.height;
  const pad = 28;
  g.clearRect(0, 0, W, H);
  const newest = history.at(-1);
  if (history.length < 2 || !newest) return;
  const names = newest.classes.map((c) => c.name);
  const series = names.map((n) =>
    history.slice(1).map((h, i) => {
      const prev = history[i]!.classes.find((c) => c.name === n);
      const cur = h.classes.find((c) => c.name === n);
      const dt = (h.at - history[i]!.at) / 1000;
      return prev && cur && dt > 0 ? Math.max(0, (cur.served - prev.served) / dt) : 0;
    }),
  );
  const queue = history.slice(1).map((h) => h.classes.reduce((n, c) => n + c.queued, 0));
  const top = Math.max(1, ...series.flat(), ...queue);
  const x = (i: number) => pad + (i * (W - pad - 6)) / Math.max(1, queue.length - 1);
  const y = (v: number) => H - pad + 4 - (v / top) * (H - pad - 10);
  g.strokeStyle = '#d9dee5';
  g.fillStyle = '#5f6b7a';
  g.font = '11px system-ui';
  g.beginPath();
  g.moveTo(pad, 6);
  g.lineTo(pad, H - pad + 4);
  g.lineTo(W - 6, H - pad + 4);
  g.stroke();
  g.fillText(String(Math.round(top)), 2, 14);
  g.fillText('0', 14, H - pad + 4);
  g.fillText(`last ${Math.round((newest.at - history[0]!.at) / 1000)} s`, W - 80, H - 8);
  const colors = ['#0b63c5', '#1b7f3b', '#8a4fff', '#b3261e'];
  const line = (vals: readonly number[], color: string, dash: boolean) => {
    g.strokeStyle = color;
    g.setLineDash(dash ? [5, 4] : []);
    g.lineWidth = 2;
    g.beginPath();
    for (const [i, v] of vals.entries()) {
      if (i) g.lineTo(x(i), y(v));
      else g.moveTo(x(i), y(v));
    }
    g.stroke();
  };
  for (const [i, s] of series.entries()) line(s, colors[i % colors.length]!, false);
  line(queue, '#e8710a', true);
  g.setLineDash([]);
  $('#chart-legend').textContent = `${names.map((n, i) => `${n} ${['blue', 'green', 'purple', 'red'][i % 4]}`).join(' · ')} (requests/s) · queue length orange, dashed`;
}
