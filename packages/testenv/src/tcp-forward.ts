// Runs in the second real node's network namespace: listens on `<listen>`
// (host:port) and forwards every connection to `<target>` (host:port). The
// API server listens on the host's loopback only; this gives the namespace a
// loopback port of the same number, so its kubelet, kube-proxy and Pods use
// the control plane's kubeconfig and `kubernetes` Service unchanged.
import { connect, createServer } from 'node:net';

const [listen, target] = process.argv.slice(2);
if (!listen || !target) throw new Error('usage: tcp-forward.ts <listen host:port> <target host:port>');
const split = (a: string) => {
  const i = a.lastIndexOf(':');
  return { host: a.slice(0, i), port: Number(a.slice(i + 1)) };
};
const to = split(target);
const from = split(listen);
createServer((client) => {
  const upstream = connect(to.port, to.host);
  client.pipe(upstream).pipe(client);
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close);
  upstream.on('error', close);
  client.on('close', close);
  upstream.on('close', close);
}).listen(from.port, from.host);
