import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { SubjectChannel } from './channel.ts';

/** A stand-in subject: prints `lines`, then answers each stdin line with `answer`, and exits on "quit". */
function fake(lines: string[], answer = '{"ev":"seen","events":1,"ms":2}') {
  const script = `
    for (const l of ${JSON.stringify(lines)}) console.log(l);
    require('node:readline').createInterface({ input: process.stdin }).on('line', (l) => {
      if (l === 'quit') process.exit(3);
      console.log(${JSON.stringify(answer)});
    });`;
  return spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
}

describe('SubjectChannel', () => {
  it('hands each waiter the next message of its kind, also one that came before it waited', async () => {
    const child = fake(['{"ev":"synced","ms":1,"heapBefore":2}', '{"ev":"initial","ms":3,"reconciles":4}']);
    const channel = new SubjectChannel(child);
    assert.equal((await channel.next('initial', 10_000)).reconciles, 4);
    assert.equal((await channel.ask('expect 1', 'seen', 10_000)).events, 1);
    child.kill();
  });

  it('hands the messages of a kind with a listener to it, and the others to their waiters', async () => {
    const child = fake([
      '{"ev":"reconciled","ids":[1,2],"at":5}',
      '{"ev":"synced","ms":1,"heapBefore":2}',
      '{"ev":"reconciled","ids":[3],"at":6}',
    ]);
    const channel = new SubjectChannel(child);
    const ids: number[] = [];
    channel.on('reconciled', (m) => ids.push(...m.ids));
    assert.equal((await channel.next('synced', 10_000)).ms, 1);
    await channel.ask('expect 1', 'seen', 10_000);
    assert.deepEqual(ids, [1, 2, 3]);
    child.kill();
  });

  it('fails the wait when the subject reports an error', async () => {
    const child = fake([], '{"ev":"error","message":"no such thing"}');
    const channel = new SubjectChannel(child);
    await assert.rejects(channel.ask('requeue', 'drained', 10_000), /subject: no such thing/);
    child.kill();
  });

  it('fails the wait when the subject exits', async () => {
    const child = fake([]);
    const channel = new SubjectChannel(child);
    await assert.rejects(channel.ask('quit', 'drained', 10_000), /exited with 3/);
  });

  it('fails the wait when the subject writes something that is not a message', async () => {
    const child = fake(['panic: oops']);
    const channel = new SubjectChannel(child);
    await assert.rejects(channel.next('synced', 10_000), /not JSON: panic: oops/);
    child.kill();
  });
});
