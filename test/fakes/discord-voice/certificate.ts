/**
 * The voice server's TLS certificate. @discordjs/voice hard-codes `wss://`, so the fake needs a
 * certificate the client trusts. It is made here, at test time, by openssl, and lives only in
 * memory: a committed private key could end up trusted somewhere it should not be.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';

/** A PEM key pair for `https.createServer`. */
export interface LoopbackCertificate {
  key: string;
  cert: string;
}

const run = promisify(execFile);
let made: Promise<LoopbackCertificate> | undefined;
const trusted = new Set<string>();

/**
 * A self-signed P-256 certificate for `IP:127.0.0.1`, valid for a day. One per process: every fake
 * shares it, so trusting it once is enough and the CA list does not grow with each test.
 */
export function loopbackCertificate(): Promise<LoopbackCertificate> {
  made ??= makeCertificate();
  return made;
}

async function makeCertificate(): Promise<LoopbackCertificate> {
  const directory = await mkdtemp(join(tmpdir(), 'fake-voice-tls-'));
  const keyPath = join(directory, 'key.pem');
  const certPath = join(directory, 'cert.pem');
  try {
    // ws sends no SNI for an IP host and Node checks the IP against subjectAltName, not the CN.
    await run('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', keyPath, '-out', certPath,
    ]);
    return { key: await readFile(keyPath, 'utf8'), cert: await readFile(certPath, 'utf8') };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/**
 * Makes every TLS client of this process (the bot's @discordjs/voice included) trust `pem`, on top of
 * the default CAs. Needs Node >= 22.19; a bot in a child process gets `NODE_EXTRA_CA_CERTS` instead.
 */
export function trustCertificate(pem: string): void {
  if (trusted.has(pem)) return;
  if (typeof tls.setDefaultCACertificates !== 'function') {
    throw new Error(`fake voice: tls.setDefaultCACertificates needs Node >= 22.19 (this is ${process.version}); use NODE_EXTRA_CA_CERTS`);
  }
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), pem]);
  trusted.add(pem);
}
