// The harness's end of a subject's line protocol: reads its stdout as
// messages and hands each to whoever waits for that kind; an "error"
// message, a line that is not a message, or the process exiting fails the wait.
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { parseSubjectLine, type SubjectMessage } from './protocol.ts';

type Of<E extends SubjectMessage['ev']> = Extract<SubjectMessage, { ev: E }>;

export class SubjectChannel {
  readonly #child: ChildProcess;
  readonly #inbox: SubjectMessage[] = [];
  #waiter: { ev: string; resolve: (m: SubjectMessage) => void; reject: (e: Error) => void } | undefined;
  #failure: Error | undefined;
  readonly #listeners = new Map<string, (m: SubjectMessage) => void>();

  constructor(child: ChildProcess) {
    this.#child = child;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        this.#deliver(parseSubjectLine(line));
      } catch (err) {
        this.#fail(err as Error);
      }
    });
    child.once('exit', (code, signal) => this.#fail(new Error(`subject exited with ${code ?? signal}`)));
  }

  /**
   * Hands every message of kind `ev` to `listener` instead of keeping it for next(): for the
   * messages a subject sends unasked and many times (the sharded replicas' "reconciled").
   */
  on<E extends SubjectMessage['ev']>(ev: E, listener: (m: Of<E>) => void): void {
    this.#listeners.set(ev, listener as (m: SubjectMessage) => void);
  }

  /** Sends one command line. */
  send(command: string): void {
    this.#child.stdin!.write(`${command}\n`);
  }

  /** The next message of kind `ev` (earlier ones of other kinds are dropped), within `timeoutMs`. */
  next<E extends SubjectMessage['ev']>(ev: E, timeoutMs: number): Promise<Of<E>> {
    const i = this.#inbox.findIndex((m) => m.ev === ev);
    if (i >= 0) return Promise.resolve(this.#inbox.splice(0, i + 1).at(-1) as Of<E>);
    if (this.#failure) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiter = undefined;
        reject(new Error(`no "${ev}" from the subject within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this.#waiter = {
        ev,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m as Of<E>);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
    });
  }

  /** Sends a command and waits for its answer. */
  ask<E extends SubjectMessage['ev']>(command: string, ev: E, timeoutMs: number): Promise<Of<E>> {
    const answer = this.next(ev, timeoutMs);
    this.send(command);
    return answer;
  }

  #deliver(m: SubjectMessage): void {
    if (m.ev === 'error') return this.#fail(new Error(`subject: ${m.message}`));
    const listener = this.#listeners.get(m.ev);
    if (listener) return listener(m);
    const w = this.#waiter;
    if (w && w.ev === m.ev) {
      this.#waiter = undefined;
      w.resolve(m);
    } else this.#inbox.push(m);
  }

  #fail(err: Error): void {
    this.#failure ??= err;
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.reject(this.#failure);
  }
}
