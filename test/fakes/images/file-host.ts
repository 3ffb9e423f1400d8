/**
 * A loopback file host standing in for our own signed URLs: the face-model archive
 * (`lora_1`) and the photo zip (`input_images`) that engines download themselves.
 */
import { type LoopbackServer, sendBytes, sendJson, startLoopbackServer } from './loopback-server.js';

export interface FileHost extends LoopbackServer {
  /** Serves `bytes` at `/<name>` and returns its URL. */
  put(name: string, bytes: Uint8Array, contentType?: string): string;
  /** Stops serving a file: its URL answers 404, as an expired signed URL would. */
  remove(name: string): void;
}

export async function startFileHost(): Promise<FileHost> {
  const files = new Map<string, { bytes: Uint8Array; contentType: string }>();
  const server = await startLoopbackServer((request, response) => {
    const file = files.get(request.path);
    if (file === undefined) sendJson(response, 404, { error: 'not found' });
    else sendBytes(response, file.bytes, file.contentType);
  });
  return {
    ...server,
    put: (name, bytes, contentType = 'application/octet-stream') => {
      files.set(`/${name}`, { bytes, contentType });
      return `${server.url}/${name}`;
    },
    remove: (name) => void files.delete(`/${name}`),
  };
}
