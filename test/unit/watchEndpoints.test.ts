import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { LoopPulse, parseListen, serveEndpoints } from '../../src/cli/watchEndpoints.js';
import { freePort } from '../../src/demo/embeddedPostgres.js';
import type { WakeReason } from '../../src/pipeline/watchLoop.js';

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('--listen ADDRESS:PORT', () => {
  it.each([
    ['127.0.0.1:9475', { host: '127.0.0.1', port: 9475 }],
    ['0.0.0.0:1', { host: '0.0.0.0', port: 1 }],
    ['[::]:9475', { host: '::', port: 9475 }],
    ['[::1]:65535', { host: '::1', port: 65535 }],
    ['localhost:8080', { host: 'localhost', port: 8080 }],
  ])('%s is an address of this host and a port', (text, address) => {
    expect(parseListen(text)).toEqual(address);
  });

  it.each([
    ['9475', /expected ADDRESS:PORT/],
    [':9475', /name the address/],
    ['[]:9475', /name the address/],
    ['example.com:9475', /not an IPv4 address or localhost/],
    ['::1:9475', /IPv6 address goes in brackets/],
    ['[10.0.0.1]:9475', /not an IPv6 address/],
    ['127.0.0.1:0', /from 1 to 65535/],
    ['127.0.0.1:65536', /from 1 to 65535/],
    ['127.0.0.1:', /expected ADDRESS:PORT/],
  ])('%s is refused, saying why', (text, why) => {
    expect(() => parseListen(text)).toThrow(why);
  });
});

describe('the pulse of the watch loop (/healthz)', () => {
  it('is live in a cycle and while a wait is due, not once a wait overran its end by more than a minute or the loop ended', async () => {
    let now = 0;
    const pulse = new LoopPulse(() => now);
    expect(pulse.live()).toMatchObject({ ok: true, reason: expect.stringMatching(/^a cycle in hand/) });
    let wake: ((reason: WakeReason) => void) | undefined;
    const waiting = pulse.waiting(() => new Promise<WakeReason>((resolve) => (wake = resolve)))(5_000);
    now = 5_000 + 60_000;
    expect(pulse.live().ok).toBe(true);
    now += 1_000;
    expect(pulse.live()).toEqual({ ok: false, reason: 'the next cycle is 61s overdue: the loop no longer wakes' });
    wake!('timeout');
    await waiting;
    // an hour in one cycle is a long load, not a dead loop
    now += 3_600_000;
    expect(pulse.live().ok).toBe(true);
    pulse.end();
    expect(pulse.live()).toEqual({ ok: false, reason: 'the watch loop has ended' });
  });
});

describe('the endpoints', () => {
  it('answer the three paths only, 503 for metrics not yet rendered, and a readiness reason with its password hidden', async () => {
    const port = await freePort();
    let checks = 0;
    let answer: () => void = () => undefined;
    let fail: ((err: Error) => void) | undefined;
    const metrics: { text: string | undefined } = { text: undefined };
    const server = await serveEndpoints(
      { host: '127.0.0.1', port },
      {
        metrics,
        pulse: { live: () => ({ ok: true, reason: 'waiting' }) },
        ready: () =>
          new Promise<void>((resolve, reject) => {
            checks++;
            answer = resolve;
            fail = reject;
          }),
      },
    );
    try {
      expect(await get(port, '/metrics')).toEqual({ status: 503, body: 'no metrics yet: the first cycle has not ended\n' });
      metrics.text = '# TYPE x gauge\nx 1\n';
      expect(await get(port, '/metrics')).toEqual({ status: 200, body: '# TYPE x gauge\nx 1\n' });
      expect(await get(port, '/healthz')).toEqual({ status: 200, body: 'live: waiting\n' });
      expect((await get(port, '/nope')).status).toBe(404);

      const probe = get(port, '/readyz');
      while (checks === 0) await new Promise((resolve) => setImmediate(resolve));
      answer();
      expect(await probe).toEqual({ status: 200, body: 'ready\n' });

      const refused = get(port, '/readyz');
      while (checks === 1) await new Promise((resolve) => setImmediate(resolve));
      fail!(new Error('connect to postgres://settle:s3cret@db.example:5432/finance refused'));
      expect(await refused).toEqual({ status: 503, body: 'not ready: connect to postgres://settle:***@db.example:5432/finance refused\n' });
    } finally {
      await server.close();
    }
  });
});
