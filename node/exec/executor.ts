// Requests executed on this board: those the master sends over the dispatch link, and, on the
// master, those it runs itself. The board's load (requests in execution) is counted here: it
// rides on every answer and on the heartbeat REPORT.
import type { IncomingMessage } from 'node:http';
import { Cancel } from '../../shared/cancel.ts';
import type { BoardConfig, Config } from '../../shared/config.ts';
import type { AnswerFrame, RequestFrame } from '../../shared/dispatch-frame.ts';
import { DispatchReplayGuard } from '../../shared/dispatch-replay-guard.ts';
import { EwsError } from '../../shared/errors.ts';
import { frameRefusal } from '../../shared/frame-acceptance.ts';
import { headerLines } from '../../shared/header-lines.ts';
import type { Counter, Registry } from '../../shared/metrics.ts';
import type { ClusterMirror } from '../cluster-plane/mirror.ts';
import { CapturedAnswer } from '../http/answer.ts';
import { sendError } from '../http/http-io.ts';
import type { LocalRun } from '../http/intake.ts';
import type { Handlers } from './handlers.ts';

export class Executor {
  private readonly replay: DispatchReplayGuard;
  private readonly rejected: Counter;

  /** `bootEpoch`: this board's epoch at boot; frames for an earlier boot are refused. */
  constructor(
    private readonly cfg: Config,
    private readonly self: BoardConfig,
    private readonly mirror: ClusterMirror,
    private readonly handlers: Handlers,
    metrics: Registry,
    private readonly bootEpoch: number,
  ) {
    this.replay = new DispatchReplayGuard(cfg.limits.dispatchReplayWindow);
    this.rejected = metrics.counter('ews_forward_rejected_total', 'Dispatch frames refused: addressed to another board or an earlier boot of this one, from a stale master, replayed, by reason');
  }

  /** A request the master dispatched to this board over the dispatch link. */
  fromLink(f: RequestFrame, answer: (a: AnswerFrame) => void): { cancel(): void } | undefined {
    const mirror = this.mirror;
    const reason = frameRefusal(f, { self: this.self.index, bootEpoch: this.bootEpoch, term: mirror.term, master: mirror.master, classes: this.cfg.classes.length }, this.replay);
    const cls = this.cfg.classes[f.cls];
    const replyAs =
      (refused: boolean) =>
      (status: number, headers: string[], body: Buffer): void => {
        answer({ id: f.id, load: mirror.load, status, refused, head: headerLines(headers), body });
        // A refused frame may come from a board that is no longer master: it proves nothing to ours.
        if (!refused) mirror.answeredMaster();
      };
    const reply = replyAs(false);
    if (reason || !cls) {
      this.rejected.inc({ reason: reason ?? 'class' });
      sendError(new CapturedAnswer(replyAs(true)), new EwsError('NOT_FROM_MASTER', `refused: ${reason}`));
      return undefined;
    }
    const headers: IncomingMessage['headers'] = {};
    for (let i = 0; i < f.headers.length; i += 2) headers[f.headers[i]!] = f.headers[i + 1]!;
    const cancel = new Cancel();
    const out = new CapturedAnswer((status, h, body) => {
      mirror.finished();
      // An answer the link cannot carry would close it for every request on it: an error instead.
      if (body.length > this.cfg.limits.answerBytesMax) return sendError(new CapturedAnswer(reply), new EwsError('ANSWER_TOO_LARGE', `the answer is ${body.length} bytes`));
      reply(status, h, body);
    });
    // Whatever the handler did, the answer ends (one settle of its promise, no catch/finally chain per request).
    const over = (): void => {
      if (!out.writableFinished) out.destroy();
    };
    mirror.accepted();
    this.handlers.execute({ method: f.method, url: f.url, headers, body: f.body, cls: cls.name, level: f.level, origin: f.origin, signal: cancel }, out).then(over, (err: unknown) => {
      sendError(out, err);
      over();
    });
    return cancel;
  }

  /** The master runs a request itself: `done` when its answer is over (or the client left). */
  local(run: LocalRun, done: () => void): { cancel(): void } {
    const mirror = this.mirror;
    const cancel = new Cancel();
    mirror.accepted();
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      mirror.finished();
      done();
    };
    const over = (): void => {
      if (run.res.writableFinished || run.res.destroyed) end();
    };
    run.res.once('close', end);
    this.handlers
      .execute(
        {
          method: run.method,
          url: run.url,
          headers: run.headers,
          body: run.body,
          cls: run.cls,
          level: run.level,
          origin: run.origin,
          signal: cancel,
          redirect: (to) => {
            end();
            run.redirect(to);
          },
        },
        run.res,
      )
      .then(over, (err: unknown) => {
        sendError(run.res, err);
        over();
      });
    return cancel;
  }
}
