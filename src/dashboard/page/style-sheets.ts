/**
 * The page's Content-Security-Policy allows its own stylesheet alone (`style-src 'self'`): no
 * `<style>` element may apply. xterm.js's DOM renderer writes its theme and cell sizes into
 * `<style>` elements it creates, which that policy blocks. Rather than loosen the policy, the page
 * hands it stand-ins: a `<style>` asked of the document is an inert element whose text goes into
 * a constructed stylesheet (`new CSSStyleSheet()`, adopted by the document), which the policy
 * does not govern, since no markup or network is involved; it leaves the document with its
 * stand-in. The page itself never makes a `<style>` element, so only the library's are routed.
 */
export function routeStyleElements(doc: Document): void {
  const create = doc.createElement.bind(doc) as (tag: string, options?: ElementCreationOptions) => HTMLElement;
  const routed = (tag: string, options?: ElementCreationOptions): HTMLElement => {
    if (tag.toLowerCase() !== "style") return create(tag, options);
    // A template's content is never rendered: the stand-in shows nothing and applies nothing itself.
    const stand = create("template");
    const sheet = new CSSStyleSheet();
    let text = "";
    doc.adoptedStyleSheets = [...doc.adoptedStyleSheets, sheet];
    Object.defineProperty(stand, "textContent", {
      get: () => text,
      set: (value: unknown) => {
        text = value == null ? "" : String(value);
        sheet.replaceSync(text);
      },
    });
    stand.remove = () => {
      Element.prototype.remove.call(stand);
      doc.adoptedStyleSheets = doc.adoptedStyleSheets.filter((adopted) => adopted !== sheet);
    };
    return stand;
  };
  doc.createElement = routed as typeof doc.createElement;
}
