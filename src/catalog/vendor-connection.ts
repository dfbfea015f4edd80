import type { Availability, CatalogVendor } from './catalog-types';

export interface VendorConnection extends Availability {
  /** The first of `apiKeys`. */
  apiKey?: string;
  /** The keys of the setting, a comma-separated list (several keys per vendor, api-decisions 32). */
  apiKeys?: string[];
  baseURL?: string;
}

/**
 * How to reach a vendor with the current settings (config.providers.settings: every *_API_KEY and
 * *_BASE_URL variable). The one rule for "configured": `dev` always; a keyed vendor when its key is set
 * (and, for an OpenAI-compatible vendor without a default, its base URL); a keyless one when its base URL
 * is set. Shared by the catalog (availability) and the provider registry (adapter options).
 */
export function resolveVendorConnection(
  vendor: CatalogVendor,
  settings: Readonly<Record<string, string>>,
): VendorConnection {
  if (vendor.adapter === 'dev') return { available: true };
  const apiKeys = (vendor.apiKeyEnv ? (settings[vendor.apiKeyEnv] ?? '') : '')
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key.length > 0);
  const apiKey = apiKeys[0];
  const baseURL = (vendor.baseUrlEnv ? settings[vendor.baseUrlEnv] || undefined : undefined) ?? vendor.defaultBaseUrl;
  if (vendor.requiresKey && !apiKey) return { available: false, missing: vendor.apiKeyEnv };
  const needsBaseUrl = !vendor.requiresKey || vendor.adapter === 'openai-compatible';
  if (needsBaseUrl && !baseURL) return { available: false, missing: vendor.baseUrlEnv };
  return { available: true, apiKey, ...(apiKeys.length > 1 ? { apiKeys } : {}), baseURL };
}
