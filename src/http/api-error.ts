/**
 * An apiserver (or registry) answer other than 2xx, or a transport failure (code 0): the one error
 * of every HTTP exchange prewarm makes, in the CLI and the sidecar alike. Branch on {@link code},
 * never on the message text.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    /** HTTP status; 0 for transport errors (connection refused, timeout). */
    readonly code: number,
    message: string,
    /** `Status.reason` from the apiserver, e.g. `Conflict`, `Expired`. */
    readonly reason?: string,
  ) {
    super(message);
  }
}
