// A small Prometheus registry: labelled counters, and gauges read when scraped.

type Labels = Record<string, string | number>;

/** Label values escaped as the text format wants: backslash, double quote and newline. */
const escapeLabel = (v: string | number): string => String(v).replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));

const fmtLabels = (l: Labels): string => {
  const keys = Object.keys(l);
  if (keys.length === 0) return '';
  return `{${keys.map((k) => `${k}="${escapeLabel(l[k]!)}"`).join(',')}}`;
};

/** Series one counter may hold; past it, new label sets are counted in ews_metrics_series_dropped_total. */
export const SERIES_MAX = 256;

export class Counter {
  private readonly values = new Map<string, { labels: Labels; value: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly dropped: (metric: string) => void = () => {},
    private readonly maxSeries = SERIES_MAX,
  ) {}
  inc(labels: Labels = {}, by = 1): void {
    const key = fmtLabels(labels);
    const v = this.values.get(key);
    if (v) v.value += by;
    else if (this.values.size < this.maxSeries) this.values.set(key, { labels, value: by });
    else this.dropped(this.name);
  }
  get(labels: Labels = {}): number {
    return this.values.get(fmtLabels(labels))?.value ?? 0;
  }
  render(): string {
    let s = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} counter\n`;
    for (const [k, v] of this.values) s += `${this.name}${k} ${v.value}\n`;
    return s;
  }
}

/** Values read when scraped: a gauge, or a counter kept elsewhere (`kind: 'counter'`). */
export class Gauge {
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => Array<[Labels, number]>,
    private readonly kind: 'gauge' | 'counter' = 'gauge',
  ) {}
  render(): string {
    let s = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} ${this.kind}\n`;
    for (const [l, v] of this.read()) s += `${this.name}${fmtLabels(l)} ${v}\n`;
    return s;
  }
}

export class Registry {
  private readonly items: Array<Counter | Gauge> = [];
  private readonly droppedSeries: Counter;
  private readonly texts: Array<() => string> = [];
  /** `part`: this registry's text is appended to another's (a worker thread's), which counts dropped series itself. */
  constructor(opts: { part?: boolean } = {}) {
    this.droppedSeries = new Counter('ews_metrics_series_dropped_total', 'Label sets not recorded because a metric held SERIES_MAX series, by metric');
    if (!opts.part) this.items.push(this.droppedSeries);
  }
  /** Exposition text rendered elsewhere (another thread's registry), appended as it is. */
  include(text: () => string): void {
    this.texts.push(text);
  }
  counter(name: string, help: string): Counter {
    const c = new Counter(name, help, (metric) => this.droppedSeries.inc({ metric }));
    this.items.push(c);
    return c;
  }
  gauge(name: string, help: string, read: () => Array<[Labels, number]>): Gauge {
    const g = new Gauge(name, help, read);
    this.items.push(g);
    return g;
  }
  /** A counter whose value lives elsewhere, read when scraped. */
  counterOf(name: string, help: string, read: () => Array<[Labels, number]>): Gauge {
    const g = new Gauge(name, help, read, 'counter');
    this.items.push(g);
    return g;
  }
  render(): string {
    return this.items.map((i) => i.render()).join('') + this.texts.map((t) => t()).join('');
  }
}
