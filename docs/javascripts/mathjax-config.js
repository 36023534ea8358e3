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
    // only the maths that arithmatex marked, and the markdown cells of notebooks
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex|jp-RenderedMarkdown|jp-MarkdownOutput",
  },
  svg: { fontCache: "global" },
};

// typeset again after Material's instant navigation swaps the page content
if (typeof document$ !== "undefined") {
  document$.subscribe(() => {
    if (window.MathJax && MathJax.typesetPromise) {
      MathJax.startup.output.clearCache();
      MathJax.typesetClear();
      MathJax.texReset();
      MathJax.typesetPromise();
    }
  });
}
