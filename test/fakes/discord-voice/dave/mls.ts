/**
 * The few MLS (RFC 9420) structures a DAVE voice gateway writes and reads, for DAVE protocol
 * version 1: ciphersuite 2 (DHKEMP256_AES128GCM_SHA256_P256, ECDSA P-256 signatures in DER),
 * basic credentials whose identity is the user id as a big-endian u64, the group id the channel
 * id the same way. The gateway is the group's one external sender: it signs Add and Remove
 * proposals as PublicMessages, and only inspects what members send (key packages, commits,
 * welcomes) without holding any group secret, as daveprotocol.com describes.
 */
import { createHash, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { TlsDecodeError, TlsReader, TlsWriter } from './tls.js';

const MLS_10 = 1;
/** MLS_128_DHKEMP256_AES128GCM_SHA256_P256, the ciphersuite of DAVE protocol version 1. */
export const DAVE_CIPHER_SUITE = 2;
const WIRE_FORMAT_PUBLIC_MESSAGE = 1;
const SENDER_MEMBER = 1;
const SENDER_EXTERNAL = 2;
const CONTENT_PROPOSAL = 2;
const CONTENT_COMMIT = 3;
const PROPOSAL_ADD = 1;
const PROPOSAL_REMOVE = 3;
const PROPOSAL_OR_REF_PROPOSAL = 1;
const PROPOSAL_OR_REF_REFERENCE = 2;
const CREDENTIAL_BASIC = 1;
const CREDENTIAL_X509 = 2;
const LEAF_SOURCE_KEY_PACKAGE = 1;
const LEAF_SOURCE_UPDATE = 2;
const LEAF_SOURCE_COMMIT = 3;

/** Something a member sent that a DAVE gateway refuses; `reason` says why. */
export class MlsRejection extends Error {
  override readonly name = 'MlsRejection';
}

/** `SignWithLabel`: ECDSA-SHA256 (DER) over `SignContent { "MLS 1.0 " + label <V>; content <V> }`. */
export function signWithLabel(privateKey: KeyObject, label: string, content: Buffer): Buffer {
  return sign('sha256', signContent(label, content), privateKey);
}

/** `VerifyWithLabel` with a raw (uncompressed SEC1) P-256 public key. */
export function verifyWithLabel(publicKey: Buffer, label: string, content: Buffer, signature: Buffer): boolean {
  try {
    return verify('sha256', signContent(label, content), p256PublicKey(publicKey), signature);
  } catch {
    return false;
  }
}

function signContent(label: string, content: Buffer): Buffer {
  return new TlsWriter().vector(Buffer.from(`MLS 1.0 ${label}`)).vector(content).toBuffer();
}

/** `RefHash(label, value)` with SHA-256: how MLS names key packages and proposals. */
export function refHash(label: string, value: Buffer): Buffer {
  return createHash('sha256').update(new TlsWriter().vector(Buffer.from(label)).vector(value).toBuffer()).digest();
}

/** A snowflake as DAVE puts it in credentials and group ids: a big-endian u64. */
export function snowflakeBytes(id: string): Buffer {
  return new TlsWriter().uint64(BigInt(id)).toBuffer();
}

function p256PublicKey(raw: Buffer): KeyObject {
  if (raw.length !== 65 || raw[0] !== 0x04) throw new MlsRejection('signature key is not an uncompressed P-256 point');
  return createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: raw.subarray(1, 33).toString('base64url'), y: raw.subarray(33).toString('base64url') }, format: 'jwk' });
}

/** The voice gateway's signing identity: a P-256 key pair and a basic credential. */
export class ExternalSender {
  readonly #privateKey: KeyObject;
  /** The uncompressed SEC1 public key, as MLS carries signature keys. */
  readonly publicKey: Buffer;

  constructor(readonly identity: Buffer) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.#privateKey = privateKey;
    const jwk = publicKey.export({ format: 'jwk' });
    this.publicKey = Buffer.concat([Buffer.from([0x04]), Buffer.from(jwk.x ?? '', 'base64url'), Buffer.from(jwk.y ?? '', 'base64url')]);
  }

  /** `ExternalSender { signature_key<V>; Credential { credential_type = basic; identity<V> } }`, op 25's body. */
  serialize(): Buffer {
    return new TlsWriter().vector(this.publicKey).uint16(CREDENTIAL_BASIC).vector(this.identity).toBuffer();
  }

  /**
   * A proposal as an MLSMessage PublicMessage from external sender 0. Its signature covers
   * `FramedContentTBS` (version, wire format, content; no group context for external senders),
   * and it carries no membership tag. The ref is `RefHash("MLS 1.0 Proposal Reference",
   * AuthenticatedContent)`, which a commit uses to name it.
   */
  proposal(groupId: Buffer, epoch: bigint, proposal: Buffer): { message: Buffer; ref: Buffer } {
    const content = new TlsWriter().vector(groupId).uint64(epoch).uint8(SENDER_EXTERNAL).uint32(0).vector(Buffer.alloc(0)).uint8(CONTENT_PROPOSAL).raw(proposal).toBuffer();
    const toBeSigned = new TlsWriter().uint16(MLS_10).uint16(WIRE_FORMAT_PUBLIC_MESSAGE).raw(content).toBuffer();
    const signature = signWithLabel(this.#privateKey, 'FramedContentTBS', toBeSigned);
    const authenticatedContent = new TlsWriter().uint16(WIRE_FORMAT_PUBLIC_MESSAGE).raw(content).vector(signature).toBuffer();
    return {
      message: new TlsWriter().uint16(MLS_10).raw(authenticatedContent).toBuffer(),
      ref: refHash('MLS 1.0 Proposal Reference', authenticatedContent),
    };
  }
}

/** `Proposal { proposal_type = add; KeyPackage key_package }`. */
export function addProposal(keyPackage: Buffer): Buffer {
  return new TlsWriter().uint16(PROPOSAL_ADD).raw(keyPackage).toBuffer();
}

/** `Proposal { proposal_type = remove; uint32 removed }`. */
export function removeProposal(leafIndex: number): Buffer {
  return new TlsWriter().uint16(PROPOSAL_REMOVE).uint32(leafIndex).toBuffer();
}

/** Op 27's body: the operation (0 append) and the proposals as a `<V>` vector of MLSMessages. */
export function appendProposals(messages: readonly Buffer[]): Buffer {
  return new TlsWriter().uint8(0).vector(Buffer.concat(messages)).toBuffer();
}

/** Op 27's body for revoking: operation 1 and a `<V>` vector of `ProposalRef<V>`. */
export function revokeProposals(refs: readonly Buffer[]): Buffer {
  const inner = new TlsWriter();
  for (const ref of refs) inner.vector(ref);
  return new TlsWriter().uint8(1).vector(inner.toBuffer()).toBuffer();
}

interface LeafNode {
  signatureKey: Buffer;
  credentialType: number;
  identity: Buffer;
  lifetime: { notBefore: bigint; notAfter: bigint } | null;
}

function readCredential(reader: TlsReader): { type: number; identity: Buffer } {
  const type = reader.uint16();
  if (type === CREDENTIAL_BASIC) return { type, identity: reader.vector() };
  if (type === CREDENTIAL_X509) return { type, identity: (reader.vector(), Buffer.alloc(0)) };
  throw new TlsDecodeError(`credential type ${type}`);
}

function readLeafNode(reader: TlsReader): LeafNode {
  reader.vector(); // encryption_key
  const signatureKey = reader.vector();
  const credential = readCredential(reader);
  for (let field = 0; field < 5; field++) reader.vector(); // capabilities: versions, cipher suites, extensions, proposals, credentials
  const source = reader.uint8();
  let lifetime: LeafNode['lifetime'] = null;
  if (source === LEAF_SOURCE_KEY_PACKAGE) lifetime = { notBefore: reader.uint64(), notAfter: reader.uint64() };
  else if (source === LEAF_SOURCE_COMMIT) reader.vector(); // parent_hash
  else if (source !== LEAF_SOURCE_UPDATE) throw new TlsDecodeError(`leaf node source ${source}`);
  reader.vector(); // extensions
  reader.vector(); // signature
  return { signatureKey, credentialType: credential.type, identity: credential.identity, lifetime };
}

/** What the gateway learns from a key package it accepted. */
export interface KeyPackage {
  bytes: Buffer;
  userId: string;
  signatureKey: Buffer;
  /** `RefHash("MLS 1.0 KeyPackage Reference", KeyPackage)`: names it in a Welcome's secrets. */
  ref: Buffer;
}

/**
 * Reads and validates a key package as daveprotocol.com's gateway does: MLS 1.0, ciphersuite 2, a
 * basic credential naming `userId`, the widest lifetime, and a valid `KeyPackageTBS` signature.
 * Op 26 carries the bare KeyPackage (davey and libdave send it so); an MLSMessage wrapper
 * (wire format 5) is accepted too.
 */
export function readKeyPackage(payload: Buffer, userId: string): KeyPackage {
  let bytes = payload;
  if (payload.length >= 4 && payload.readUInt16BE(0) === MLS_10 && payload.readUInt16BE(2) === 5) bytes = payload.subarray(4);
  const reader = new TlsReader(bytes);
  try {
    const version = reader.uint16();
    const cipherSuite = reader.uint16();
    if (version !== MLS_10) throw new MlsRejection(`key package for MLS version ${version}`);
    if (cipherSuite !== DAVE_CIPHER_SUITE) throw new MlsRejection(`key package for ciphersuite ${cipherSuite}`);
    reader.vector(); // init_key
    const leaf = readLeafNode(reader);
    reader.vector(); // extensions
    const toBeSigned = reader.since(0);
    const signature = reader.vector();
    if (!reader.done) throw new MlsRejection('bytes after the key package');
    if (leaf.credentialType !== CREDENTIAL_BASIC) throw new MlsRejection('key package credential is not basic');
    if (!leaf.identity.equals(snowflakeBytes(userId))) throw new MlsRejection(`key package credential names someone else than ${userId}`);
    if (leaf.lifetime?.notBefore !== 0n || leaf.lifetime.notAfter !== 2n ** 64n - 1n) throw new MlsRejection('key package lifetime is not the widest');
    if (!verifyWithLabel(leaf.signatureKey, 'KeyPackageTBS', toBeSigned, signature)) throw new MlsRejection('key package signature does not verify');
    const whole = reader.since(0);
    return { bytes: whole, userId, signatureKey: leaf.signatureKey, ref: refHash('MLS 1.0 KeyPackage Reference', whole) };
  } catch (error) {
    if (error instanceof TlsDecodeError) throw new MlsRejection(`key package does not parse: ${error.message}`);
    throw error;
  }
}

/** What the gateway inspects of a commit (it cannot verify a member's signature: that needs the group's secrets). */
export interface Commit {
  /** The MLSMessage as sent; op 29 relays it unchanged. */
  message: Buffer;
  groupId: Buffer;
  epoch: bigint;
  senderLeafIndex: number;
  /** Proposals referenced, in the order the commit applies them. */
  proposalRefs: Buffer[];
  /** The committer's new leaf node, when the commit has an update path. */
  pathLeaf: { signatureKey: Buffer; identity: Buffer } | null;
}

/** Op 28's body: a commit MLSMessage, then a Welcome when the commit adds members. */
export function readCommitWelcome(payload: Buffer): { commit: Commit; welcome: Buffer | null } {
  const reader = new TlsReader(payload);
  try {
    const version = reader.uint16();
    const wireFormat = reader.uint16();
    if (version !== MLS_10 || wireFormat !== WIRE_FORMAT_PUBLIC_MESSAGE) throw new MlsRejection(`commit is not an MLS 1.0 PublicMessage (version ${version}, wire format ${wireFormat})`);
    const groupId = reader.vector();
    const epoch = reader.uint64();
    const senderType = reader.uint8();
    if (senderType !== SENDER_MEMBER) throw new MlsRejection(`commit sender type ${senderType}, not a member`);
    const senderLeafIndex = reader.uint32();
    reader.vector(); // authenticated_data
    const contentType = reader.uint8();
    if (contentType !== CONTENT_COMMIT) throw new MlsRejection(`content type ${contentType}, not a commit`);
    const proposalRefs: Buffer[] = [];
    reader.vectorOf((proposals) => {
      const kind = proposals.uint8();
      if (kind === PROPOSAL_OR_REF_REFERENCE) proposalRefs.push(proposals.vector());
      else if (kind === PROPOSAL_OR_REF_PROPOSAL) throw new MlsRejection('commit includes a proposal by value');
      else throw new TlsDecodeError(`ProposalOrRef type ${kind}`);
      return kind;
    });
    let pathLeaf: Commit['pathLeaf'] = null;
    if (reader.uint8() === 1) {
      const leaf = readLeafNode(reader);
      pathLeaf = { signatureKey: leaf.signatureKey, identity: leaf.identity };
      reader.vector(); // nodes
    }
    reader.vector(); // signature
    reader.vector(); // confirmation_tag
    reader.vector(); // membership_tag
    const message = reader.since(0);
    const welcome = reader.done ? null : reader.rest();
    return { commit: { message, groupId, epoch, senderLeafIndex, proposalRefs, pathLeaf }, welcome };
  } catch (error) {
    if (error instanceof TlsDecodeError) throw new MlsRejection(`commit does not parse: ${error.message}`);
    throw error;
  }
}

/**
 * The Welcome cut down to one new member's secrets, as the gateway sends each welcomed member
 * (op 30): `Welcome { cipher_suite; EncryptedGroupSecrets secrets<V>; encrypted_group_info<V> }`,
 * keeping the secrets whose `new_member` is that member's KeyPackageRef. Null when none are.
 */
export function welcomeFor(welcome: Buffer, keyPackageRef: Buffer): Buffer | null {
  const reader = new TlsReader(welcome);
  try {
    const cipherSuite = reader.uint16();
    const secrets = reader.vectorOf((entry) => {
      const start = entry.offset;
      const newMember = entry.vector();
      entry.vector(); // kem_output
      entry.vector(); // ciphertext
      return { newMember, bytes: entry.since(start) };
    });
    const groupInfo = reader.vector();
    if (!reader.done) throw new TlsDecodeError('bytes after the welcome');
    const mine = secrets.filter((secret) => secret.newMember.equals(keyPackageRef));
    if (mine.length === 0) return null;
    return new TlsWriter().uint16(cipherSuite).vector(Buffer.concat(mine.map((secret) => secret.bytes))).vector(groupInfo).toBuffer();
  } catch (error) {
    if (error instanceof TlsDecodeError) throw new MlsRejection(`welcome does not parse: ${error.message}`);
    throw error;
  }
}
