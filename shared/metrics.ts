// A small Prometheus registry: labelled counters, and gauges read when scraped.

type Labels = Record<string, string | number>;

const fmtLabels = (l: Labels): string => {
  const keys = Object.keys(l);
  if (keys.length === 0) return '';
  return `{${keys.map((k) => `${k}="${String(l[k]).replace(/["\\\n]/g, '_')}"`).join(',')}}`;
};

export class Counter {
  private readonly values = new Map<string, { labels: Labels; value: number }>();
  constructor(readonly name: string, readonly help: string, private readonly maxSeries = 256) {}
  inc(labels: Labels = {}, by = 1): void {
    const key = fmtLabels(labels);
    const v = this.values.get(key);
    if (v) v.value += by;
    else if (this.values.size < this.maxSeries) this.values.set(key, { labels, value: by });
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

export class Gauge {
  constructor(readonly name: string, readonly help: string, private readonly read: () => Array<[Labels, number]>) {}
  render(): string {
    let s = `# HELP ${this.name} ${this.help}\n# TYPE ${this.name} gauge\n`;
    for (const [l, v] of this.read()) s += `${this.name}${fmtLabels(l)} ${v}\n`;
    return s;
  }
}

export class Registry {
  private readonly items: Array<Counter | Gauge> = [];
  counter(name: string, help: string): Counter {
    const c = new Counter(name, help);
    this.items.push(c);
    return c;
  }
  gauge(name: string, help: string, read: () => Array<[Labels, number]>): Gauge {
    const g = new Gauge(name, help, read);
    this.items.push(g);
    return g;
  }
  render(): string {
    return this.items.map((i) => i.render()).join('');
  }
}
