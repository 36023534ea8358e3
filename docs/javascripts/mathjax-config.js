// MathJax settings for pymdownx.arithmatex (generic mode) and rendered notebooks.
// Loaded before docs/javascripts/mathjax/tex-svg.js, the bundled renderer (no network).
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    // in the page content, only the maths that arithmatex marked and the markdown cells
    // of notebooks (whose paragraphs carry no class, so "ignore every class" would skip them)
    ignoreHtmlClass: "md-content",
    processHtmlClass: "arithmatex|jp-RenderedMarkdown|jp-MarkdownOutput",
  },
  svg: { fontCache: "global" },
};

// typeset (again) once MathJax is ready and whenever Material's instant navigation swaps
// the page content
if (typeof document$ !== "undefined") {
  document$.subscribe(() => {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise = MathJax.startup.promise.then(() => {
        MathJax.typesetClear();
        MathJax.texReset();
        return MathJax.typesetPromise();
      });
    }
  });
}
