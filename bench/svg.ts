// A small line chart as SVG, for bench/results.
export interface Series {
  name: string;
  points: Array<[number, number]>;
  color: string;
  dash?: boolean;
}

export function lineChart(title: string, xLabel: string, yLabel: string, series: Series[]): string {
  const W = 640,
    H = 360,
    L = 60,
    R = 170,
    T = 36,
    B = 46;
  const xs = series.flatMap((s) => s.points.map((p) => p[0])),
    ys = series.flatMap((s) => s.points.map((p) => p[1])).filter(Number.isFinite);
  const x0 = Math.min(...xs),
    x1 = Math.max(...xs),
    y1 = Math.max(1, ...ys) * 1.08;
  const x = (v: number) => L + ((v - x0) / (x1 - x0 || 1)) * (W - L - R);
  const y = (v: number) => H - B - (v / y1) * (H - T - B);
  const esc = (s: string) => s.replace(/[<&>]/g, (c) => ({ '<': '&lt;', '&': '&amp;', '>': '&gt;' })[c]!);
  let out = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12"><rect width="${W}" height="${H}" fill="#fff"/>`;
  out += `<text x="${W / 2 - R / 2}" y="20" text-anchor="middle" font-size="14">${esc(title)}</text>`;
  out += `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#888"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#888"/>`;
  for (let i = 0; i <= 4; i++) {
    const v = (y1 * i) / 4;
    out += `<text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${Math.round(v)}</text><line x1="${L}" y1="${y(v)}" x2="${W - R}" y2="${y(v)}" stroke="#eee"/>`;
  }
  for (const v of [...new Set(xs)]) out += `<text x="${x(v)}" y="${H - B + 16}" text-anchor="middle">${v}</text>`;
  out += `<text x="${(L + W - R) / 2}" y="${H - 10}" text-anchor="middle">${esc(xLabel)}</text><text x="14" y="${(T + H - B) / 2}" transform="rotate(-90 14 ${(T + H - B) / 2})" text-anchor="middle">${esc(yLabel)}</text>`;
  series.forEach((s, i) => {
    const pts = s.points.filter((p) => Number.isFinite(p[1]));
    out += `<polyline fill="none" stroke="${s.color}" stroke-width="2" ${s.dash ? 'stroke-dasharray="6 4"' : ''} points="${pts.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' ')}"/>`;
    for (const p of pts) out += `<circle cx="${x(p[0]).toFixed(1)}" cy="${y(p[1]).toFixed(1)}" r="3" fill="${s.color}"/>`;
    out += `<line x1="${W - R + 12}" y1="${T + 10 + i * 18}" x2="${W - R + 36}" y2="${T + 10 + i * 18}" stroke="${s.color}" stroke-width="2" ${s.dash ? 'stroke-dasharray="6 4"' : ''}/><text x="${W - R + 42}" y="${T + 14 + i * 18}">${esc(s.name)}</text>`;
  });
  return `${out}</svg>\n`;
}
