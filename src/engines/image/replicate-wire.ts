/**
 * The Replicate HTTP API wire format shared by predictions and trainings: model references,
 * the task object (`{id, status, output, error, logs, urls}`) and what its fields mean.
 * Readers take `unknown` and trust no field.
 */

import type { ImageRequest } from '../../core/ports.js';
import { type SpecImagePayload, toSpecImagePayload } from './spec-payload.js';

/**
 * The model's `input` for an image request, as the SDXL model takes it on Replicate and in
 * its Cog container: the payload under the spec's names, plus `lora_1`, the face model's
 * archive URL.
 */
export function modelInput(request: ImageRequest): SpecImagePayload {
  return toSpecImagePayload(request.payload, request.faceModel?.archiveUrl);
}

/** A task's state; `aborted` means its deadline passed before it could start. */
export type ReplicateStatus = 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled' | 'aborted';

/** A prediction or training as the adapters need it. */
export interface ReplicateTask {
  id: string;
  /** One of `ReplicateStatus`, or a newer state this code does not know (treated as running). */
  status: string;
  output: unknown;
  error: unknown;
  logs: string | undefined;
}

export interface ModelReference {
  owner: string;
  name: string;
  version?: string | undefined;
}

const REFERENCE = /^([\w.-]+)\/([\w.-]+)(?::([0-9a-f]{8,}))?$/;

/** `owner/name` or `owner/name:version`; undefined when it is neither. */
export function parseModelReference(text: string): ModelReference | undefined {
  const match = REFERENCE.exec(text.trim());
  if (match === null) return undefined;
  return { owner: match[1]!, name: match[2]!, version: match[3] };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The task in an answer body; undefined without an id and a status. */
export function taskOf(body: unknown): ReplicateTask | undefined {
  if (!isRecord(body) || typeof body['id'] !== 'string' || typeof body['status'] !== 'string') return undefined;
  return {
    id: body['id'],
    status: body['status'],
    output: body['output'],
    error: body['error'],
    logs: typeof body['logs'] === 'string' ? body['logs'] : undefined,
  };
}

/** Whether a task has ended, well or not. */
export function isTerminal(status: string): boolean {
  return status === 'succeeded' || status === 'failed' || status === 'canceled' || status === 'aborted';
}

/** `output.weights` of a finished training: the URL of `trained_model.tar`. */
export function weightsUrl(output: unknown): string | undefined {
  if (!isRecord(output)) return undefined;
  const weights = output['weights'];
  return typeof weights === 'string' && weights !== '' ? weights : undefined;
}

/** The model's error, usually a string; anything else is shown as JSON. */
export function errorText(error: unknown): string {
  if (typeof error === 'string' && error.trim() !== '') return error.trim();
  if (error === null || error === undefined) return 'no reason given';
  return JSON.stringify(error);
}
