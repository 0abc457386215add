import { invalid } from './errors.js';

const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** The given slug, or one derived from the name ("My App!" → "my-app"). */
export function slugFor(name: string, slug?: string): string {
  if (slug !== undefined) return slug;
  const derived = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '');
  if (!SLUG.test(derived)) throw invalid('slug', 'cannot be derived from the name; give one explicitly');
  return derived;
}
