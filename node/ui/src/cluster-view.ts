// The Boards table and the cluster details: who is master, each board's state and health.
import { session } from './api.ts';
import { $, banner, el } from './dom.ts';
import type { BoardRow, ClusterState, QosView, UpgradeProgress } from './model.ts';

let master: string | null = null;

export function renderCluster(c: ClusterState): void {
  $('#cluster-name').textContent = c.cluster ? `· ${c.cluster}` : '';
  // Every board the page can fail over to, its own origin first.
  session.bases = [...new Set([location.origin, ...c.boards.flatMap((b) => (b.url ? [b.url] : []))])];
  if (master && c.master && c.master !== master) banner(`Master is now ${c.master} (term ${c.term}).`, 'info');
  master = c.master;
  $('#cluster-summary').textContent = c.master ? `master ${c.master} · term ${c.term}` : 'electing a master…';
  renderBoards(c.boards);
  renderUpgrade(c.upgrade ?? null);
  $('#cluster-table tbody').replaceChildren(
    ...c.boards.map((b) =>
      el(
        'tr',
        { class: `${b.role === 'master' ? 'master' : ''} ${b.runstate === -1 ? 'down' : ''}` },
        el('td', { text: b.id }),
        el('td', { text: b.role }),
        el('td', { text: String(b.linknum) }),
        el('td', { text: `${b.runstate === 1 ? 'running' : b.runstate === 0 ? 'joining' : 'down'}${b.drained ? ' (drained)' : ''}` }),
      ),
    ),
  );
}

/** A rollout's progress: a bar per board in the order the master takes them, what it is doing, and why it stopped. */
function renderUpgrade(u: UpgradeProgress | null): void {
  const box = $('#upgrade');
  box.hidden = u === null;
  if (!u) return;
  const state = u.finishedAt === null ? 'under way' : u.stopped ? `stopped at ${u.stopped}` : 'done';
  box.replaceChildren(
    el('p', { class: u.stopped ? 'result bad' : '', text: `${u.kind === 'upgrade' ? 'Upgrade' : 'Rollback'} from ${u.from} to ${u.to}: ${state}` }),
    ...u.boards.map((b) =>
      el(
        'div',
        { class: `rollout ${b.step}`, 'data-board': b.id },
        el('span', { text: b.id }),
        el('progress', { max: 100, value: b.pct, 'aria-label': `${b.id} ${b.step}` }),
        el('span', { text: `${b.step}${b.detail ? `: ${b.detail}` : ''}` }),
      ),
    ),
  );
}

function uptime(s: number): string {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

// What an operator checks first: is each board up, and how it is doing.
function renderBoards(boards: readonly BoardRow[]): void {
  const masterHash = boards.find((b) => b.role === 'master')?.configHash;
  $('#board-table tbody').replaceChildren(
    ...boards.map((b) => {
      const h = b.health;
      const state = `${b.runstate === -1 ? 'down' : b.role === 'master' ? 'up · master' : b.runstate === 1 ? 'up' : 'joining'}${b.drained ? ' · drained' : ''}`;
      // The version cell also says which config the board runs, and whether it is the master's.
      const other = b.configHash && masterHash && b.configHash !== masterHash;
      // The config's version once a site numbers its configs (0 is the default: not shown), and a mark where it is not the master's.
      const config = `${b.configVersion ? ` · config ${b.configVersion}` : ''}${other ? ' · config ≠ master' : ''}`;
      const cells = h
        ? [`${h.cpuPct} %`, `${Math.round(h.rssBytes / 1048576)} MB`, uptime(h.uptimeS), h.tempC === null ? '–' : `${Math.round(h.tempC)} °C`, h.version + config]
        : ['–', '–', '–', '–', '–'];
      const cls = `${b.runstate === -1 ? 'down' : ''} ${h && b.runstate !== -1 ? '' : 'stale'} ${other ? 'mismatch' : ''}`;
      return el('tr', { class: cls, 'data-board': b.id }, el('td', { text: b.id }), el('td', { text: state }), ...cells.map((t) => el('td', { text: t })));
    }),
  );
}

/** The master's QoS controllers, in a line. */
export function renderQos(q: QosView | undefined): void {
  if (!q) return;
  const parts = [`scheduler ${q.scheduler}`];
  if (q.G !== undefined) parts.push(`content level ${q.G} (U ${q.U})`);
  if (q.weights) parts.push(`weights ${q.weights.join('/')}`);
  if (q.cf) parts.push(`µ-patterns ${q.patterns.join(' ')} CF ${q.cf.join('/')}`);
  if (q.proQoS) parts.push(`proQoS ${q.proQoS.join('/')}`);
  if (q.admission) parts.push(`target_in ${q.admission.map((a) => a.targetIn ?? '∞').join('/')} p ${q.admission.map((a) => a.p).join('/')}`);
  if (q.quotas) parts.push(`quotas ${q.quotas.join('/')}`);
  if (q.reservedSlots !== undefined) parts.push(`free slots ${q.freeSlots}, ${q.reservedSlots} kept for the first class (its longest wait ${Math.round((q.highWaitS ?? 0) * 1000)} ms)`);
  $('#qos').textContent = `QoS: ${parts.join(' · ')}`;
}
