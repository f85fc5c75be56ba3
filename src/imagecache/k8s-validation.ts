/**
 * Kubernetes' own syntax rules for names, label keys and label values, ported from
 * k8s.io/apimachinery/pkg/util/validation so that a spec that passes here is never refused by the
 * apiserver later. Each check returns `undefined` when valid, or the reason it is not.
 */

const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/** `IsQualifiedName`: label keys, annotation keys and taint keys, e.g. `node.kubernetes.io/pool`. */
export function checkQualifiedName(value: string): string | undefined {
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = value;
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix === '') return 'prefix part must be non-empty';
    const prefixError = checkDns1123Subdomain(prefix);
    if (prefixError !== undefined) return `prefix part ${prefixError}`;
  } else {
    return "a qualified name must consist of an optional DNS subdomain prefix and a name, separated by '/'";
  }
  if (name === '') return 'name part must be non-empty';
  if (name.length > 63) return 'name part must be no more than 63 characters';
  if (!QUALIFIED_NAME.test(name)) {
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

/** `IsValidLabelValue`: empty, or at most 63 characters of alphanumerics, `-`, `_` and `.`. */
export function checkLabelValue(value: string): string | undefined {
  if (value.length > 63) return 'must be no more than 63 characters';
  if (!LABEL_VALUE.test(value)) {
    return "must be empty or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

/** `IsDNS1123Label`: namespaces, container names. */
export function checkDns1123Label(value: string): string | undefined {
  if (value.length > 63) return 'must be no more than 63 characters';
  if (!DNS1123_LABEL.test(value)) {
    return "must be a lowercase RFC 1123 label: lowercase alphanumerics or '-', starting and ending with an alphanumeric";
  }
  return undefined;
}

/** `IsDNS1123Subdomain`: most object names, Secret names, PriorityClass names. */
export function checkDns1123Subdomain(value: string): string | undefined {
  if (value.length > 253) return 'must be no more than 253 characters';
  if (!DNS1123_SUBDOMAIN.test(value)) {
    return "must be a lowercase RFC 1123 subdomain: lowercase alphanumerics, '-' or '.', starting and ending with an alphanumeric";
  }
  return undefined;
}
