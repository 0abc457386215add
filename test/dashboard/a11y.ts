// What the application-page walks check on every section: axe-core's serious and critical
// findings, and that the keyboard alone reaches every action (Tab from the section navigation).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page as shown (run through the debugging protocol: the CSP stays). */
export async function axeProblems(page: Page): Promise<string[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE);
  return page.evaluate(async () => {
    const axe = (
      window as unknown as {
        axe: { run: (o: object) => Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }> };
      }
    ).axe;
    const result = await axe.run({ resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}

/** axeProblems in light and in dark (each finding prefixed by its scheme); the page is left light. */
export async function axeProblemsLightAndDark(page: Page): Promise<string[]> {
  const problems: string[] = [];
  for (const colorScheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme });
    problems.push(...(await axeProblems(page)).map((f) => `${colorScheme} ${f}`));
  }
  await page.emulateMedia({ colorScheme: 'light' });
  return problems;
}

/**
 * The actions of `container` (links, buttons, fields, scrollable output) that Tab never reached,
 * starting from the last element before it that takes focus (`from`). Empty: all are reachable.
 */
export async function unreachableByKeyboard(page: Page, container: string, from: string): Promise<string[]> {
  const count = await page.evaluate((selector) => {
    const actions = [
      ...document.querySelectorAll<HTMLElement>(`${selector} :is(a[href], button, input, select, textarea, [tabindex])`),
    ].filter(
      (el) =>
        el.tabIndex >= 0 &&
        !(el as HTMLButtonElement).disabled &&
        (el as HTMLInputElement).type !== 'hidden' &&
        el.getClientRects().length > 0 &&
        !el.closest('dialog:not([open])'),
    );
    document.querySelectorAll('[data-keyboard]').forEach((el) => el.removeAttribute('data-keyboard'));
    actions.forEach((el, n) => el.setAttribute('data-keyboard', String(n)));
    return actions.length;
  }, container);
  await page.locator(from).focus();
  const reached = new Set<string>();
  for (let presses = 0; presses < count + 5; presses++) {
    await page.keyboard.press('Tab');
    const mark = await page.evaluate(() => document.activeElement?.getAttribute('data-keyboard') ?? null);
    if (mark !== null) reached.add(mark);
    if (reached.size === count) break;
  }
  return page.evaluate(
    (seen) =>
      [...document.querySelectorAll<HTMLElement>('[data-keyboard]')]
        .filter((el) => !seen.includes(el.getAttribute('data-keyboard')!))
        .map((el) => `${el.tagName.toLowerCase()} "${(el.getAttribute('aria-label') ?? el.textContent ?? '').trim().slice(0, 40)}"`),
    [...reached],
  );
}
