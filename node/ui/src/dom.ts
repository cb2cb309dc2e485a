// The page's small toolkit: element lookup and creation, the one banner, formatting.

export const $ = <T extends HTMLElement = HTMLElement>(s: string): T => {
  const e = document.querySelector<T>(s);
  if (!e) throw new Error(`no element ${s}`);
  return e;
};
export const find = <T extends Element = HTMLElement>(root: ParentNode, s: string): T | null => root.querySelector<T>(s);

type Attr = string | number | boolean | undefined | ((ev: Event) => unknown);
type Kid = Node | string | undefined | null | false;

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, Attr> = {}, ...kids: Kid[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') e.textContent = String(v);
    else if (typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== false) e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const k of kids) if (k !== undefined && k !== null && k !== false && k !== '') e.append(k);
  return e;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const enc = encodeURIComponent;
export const when = (t: number) => new Date(t).toLocaleTimeString();

export function fmt(v: unknown, unit?: string): string {
  if (typeof v === 'boolean') return v ? 'on' : 'off';
  if (typeof v === 'number') return `${Math.round(v * 100) / 100}${unit ? ` ${unit}` : ''}`;
  return String(v);
}

/** Idempotency keys without crypto.randomUUID (which plain-http pages on a LAN do not get). */
export function newKey(): string {
  const a = new Uint8Array(16);
  crypto.getRandomValues(a);
  return Array.from(a, (x) => x.toString(16).padStart(2, '0')).join('');
}

// One banner at a time. `kind` lets its cause clear it: 'reconnect' goes with the next answer,
// 'info' (a new master) by itself after a while.
export type BannerKind = '' | 'reconnect' | 'info' | 'alarm';
let bannerKind: BannerKind = '';
let bannerTimer: ReturnType<typeof setTimeout> | undefined;
export function banner(text: string, kind: BannerKind = 'reconnect'): void {
  const b = $('#banner');
  clearTimeout(bannerTimer);
  if (!text) {
    bannerKind = '';
    b.hidden = true;
    return;
  }
  bannerKind = kind;
  b.textContent = text;
  b.hidden = false;
  if (kind === 'info') bannerTimer = setTimeout(() => banner(''), 10000);
}
export const bannerShows = (kind: BannerKind) => bannerKind === kind;
export const reconnected = () => bannerKind === 'reconnect' && banner('');
