/**
 * Provider options must be JSON objects: keys whose value is undefined are left out so that an unset
 * port field never reaches a vendor schema (some reject explicit nulls).
 */
export function definedOnly(
  entries: Record<string, string | number | boolean | undefined>,
): Record<string, string | number | boolean> {
  const result: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(entries)) {
    if (value !== undefined) result[key] = value;
  }
  return result;
}
