const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
const crypto = require('crypto'); const fs = require('fs'); const zlib = require('zlib');
if (isMainThread) {
  const N = 4; let done = 0, sum = 0;
  const sab = new SharedArrayBuffer(4); const ctr = new Int32Array(sab);
  for (let i = 0; i < N; i++) {
    const w = new Worker(__filename, { workerData: { sab, n: 100000 } });
    w.on('message', v => { sum += v; if (++done === N) finish(); });
    w.on('error', e => { console.error(e); process.exit(1); });
  }
  let pending = 16;
  for (let i = 0; i < 16; i++) crypto.pbkdf2('pw' + i, 'salt', 20000, 32, 'sha256', (e, k) => { if (e) throw e; if (--pending === 0) finish(); });
  const big = crypto.randomBytes(4 << 20);
  zlib.gzip(big, (e, z) => { if (e) throw e; zlib.gunzip(z, (e2, b) => { if (e2 || !b.equals(big)) { console.error('zlib mismatch'); process.exit(1); } finish(); }); });
  let fin = 0;
  function finish() { if (++fin < 3) return; if (Atomics.load(ctr, 0) !== N * 100000 || sum !== N * 100000) { console.error('bad', ctr[0], sum); process.exit(1); } console.log('node ok'); }
} else {
  const ctr = new Int32Array(workerData.sab);
  for (let i = 0; i < workerData.n; i++) Atomics.add(ctr, 0, 1);
  parentPort.postMessage(workerData.n);
}
