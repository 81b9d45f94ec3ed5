// Entry point: WORKERS processes with node:cluster (what PM2's cluster mode, used by source 004,
// runs on), each a Fastify server on the same port. The primary only supervises: if a worker dies
// the whole stack exits, so a crash is seen by the stand instead of hidden by a restart.

import cluster from 'node:cluster';
import { load } from './config.js';
import { buildApp } from './app.js';

const cfg = load();

if (cfg.workers > 1 && cluster.isPrimary) {
  for (let i = 0; i < cfg.workers; i++) cluster.fork();
  cluster.on('exit', (w, code, signal) => {
    console.error(`worker ${w.process.pid} exited (${signal ?? code}); stopping`);
    process.exit(1);
  });
  for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, () => {
      cluster.removeAllListeners('exit');
      for (const w of Object.values(cluster.workers)) w.kill(sig);
      process.exit(0);
    });
  }
} else {
  const app = buildApp(cfg);
  await app.listen({ host: '127.0.0.1', port: cfg.httpPort, backlog: 4096 });
  for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => app.close().then(() => process.exit(0)));
}
