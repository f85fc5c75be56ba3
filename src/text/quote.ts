/** How every layer quotes text it did not write into a message: escaped and bounded. A leaf. */
/** The longest excerpt of an input value that a message quotes, in characters. */
export const MAX_QUOTED_CHARS = 60;

/**
 * An input value as every message quotes it: in double quotes, cut to `max` characters with `…` and
 * the full length, and escaped so no terminal escape sequence or NUL byte reaches a log.
 */
export function quote(value: string, max: number = MAX_QUOTED_CHARS): string {
  return excerpt(value, max, true);
}

/** Like {@link quote} without the quotes, leaving `"` and `\` alone: for text that is not one value. */
export function excerpt(text: string, max: number = MAX_QUOTED_CHARS, quoted = false): string {
  let head = '';
  let count = 0;
  let cut = false;
  // By code point, so a cut never splits a surrogate pair.
  for (const char of text) {
    if (count === max) {
      cut = true;
      break;
    }
    head += char;
    count++;
  }
  const escaped = head.replace(quoted ? QUOTED_ESCAPES : ESCAPES, escapeChar) + (cut ? '…' : '');
  const body = quoted ? `"${escaped}"` : escaped;
  return cut ? `${body} (${text.length} chars)` : body;
}

// C0 and C1 controls, DEL, line and paragraph separators, bidirectional controls, the BOM, and
// (with the u flag, only unpaired) surrogates.
// eslint-disable-next-line no-control-regex -- matching control characters is the point: they are escaped
const ESCAPES = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]/gu;
const QUOTED_ESCAPES = new RegExp(`["\\\\]|${ESCAPES.source}`, 'gu');
const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '"': '\\"', '\\': '\\\\' };

function escapeChar(char: string): string {
  const named = NAMED[char];
  if (named !== undefined) return named;
  const code = char.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}
