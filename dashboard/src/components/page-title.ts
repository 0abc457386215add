import { useEffect } from 'preact/hooks';
import { useLocation } from 'preact-iso';

/**
 * After every route change: the document title names the page ("Deployments · Web · Slipway",
 * from the main heading and the section shown), and keyboard focus moves to the main heading so
 * a screen reader announces the new page instead of staying on the link or falling to <body>.
 * Pages load their data first, so this watches the page until the heading appears.
 */
export function usePageTitleAndFocus() {
  const { url } = useLocation();
  useEffect(() => {
    let focused = false;
    const apply = () => {
      // Not there yet while the session is read: the observer below calls again when it is.
      const main = document.getElementById('content');
      if (!main) return;
      const heading = main.querySelector('h1');
      const section = main.querySelector<HTMLElement>('[data-section-label]')?.dataset.sectionLabel;
      // A heading that is only the brand (the login page's) names the page in data-title instead.
      const name = heading?.dataset.title ?? heading?.textContent?.trim();
      document.title = [section && section !== 'Overview' ? section : null, name, 'Slipway'].filter(Boolean).join(' · ');
      // A section's own heading when it has one (the application's sections), else the page's.
      const target = main.querySelector<HTMLElement>('[data-page-title]') ?? heading;
      if (target && !focused) {
        focused = true;
        if (!target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');
        // Never take focus from a field the user is already typing in.
        if (!document.activeElement?.matches('input, textarea, select')) target.focus({ preventScroll: true });
      }
    };
    apply();
    const observer = new MutationObserver(apply);
    observer.observe(document.getElementById('app') ?? document.body, { childList: true, subtree: true, characterData: true });
    return () => observer.disconnect();
  }, [url]);
}
