/** A failed apiserver call in one line: a Status's `message`, escaped and cut; any other answer only named. */
import { excerpt } from '../text/quote.js';

/** The longest Status message shown: room for a whole RBAC refusal, never a flood. */
const MAX_STATUS_CHARS = 300;

/** A failed call: the HTTP status when the apiserver answered, and what to tell the user. */
export interface ApiFailure {
  /** Undefined when no answer came (refused connection, TLS, a cut or unreadable answer). */
  readonly code?: number;
  /** One line, escaped and bounded, e.g. `HTTP 403: nodes "n1" is forbidden: …`. */
  readonly message: string;
}

/** Reads a failure of @kubernetes/client-node; a code below 100 is a call that got no answer. */
export function apiFailure(err: unknown): ApiFailure {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'number' || code < 100) {
    const message = err instanceof Error ? err.message : String(err);
    return { message: excerpt(message.split('\n')[0] ?? '', MAX_STATUS_CHARS) };
  }
  const body = (err as { body?: unknown }).body;
  const status = statusMessage(body);
  if (status !== undefined) return { code, message: `HTTP ${code}: ${excerpt(status, MAX_STATUS_CHARS)}` };
  const size = typeof body === 'string' ? body.length : 0;
  return {
    code,
    message: size > 0 ? `HTTP ${code}, with an answer that is not a Kubernetes Status (${size} chars, not shown)` : `HTTP ${code}`,
  };
}

/** The `message` of a Kubernetes Status body, handed over parsed or as text. */
function statusMessage(body: unknown): string | undefined {
  let status = body;
  if (typeof body === 'string') {
    try {
      status = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  const message = (status as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message !== '' ? message : undefined;
}
