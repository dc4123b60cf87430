// Package htmltext converts the HTML of a fetched page for nika:fetch (LANGUAGE.md §7.5, D39):
// Markdown, visible text, links and metadata (the floor modes), the main content as Markdown
// (Article, mode `article`) and the text of the elements a CSS selector matches (Select, mode
// `selector`), over golang.org/x/net/html's HTML5 parse tree. The converters never fail: any
// bytes give a result, in valid UTF-8; Select stops only on its context and its output bound.
//
// Both converters first build the same block structure (paragraphs, headings, code, rules,
// lists, quotes, tables), then render it:
//
//   - Dropped with their content: script, style, noscript, iframe, svg (§7.5), plus template,
//     head, title, and any element with the `hidden` attribute (none of them is visible text).
//     CSS is not interpreted.
//   - Inline text has its HTML whitespace collapsed to single spaces; <br> is a line break.
//   - Markdown: `#` headings; `-` and `N.` list items (N from <ol start>), nested lists indented
//     under their item; fenced code for <pre> (the fence is longer than any backtick run inside,
//     the language comes from a `language-x` or `lang-x` class of the pre or its code child);
//     `> ` quotes; `---` rules; GFM pipe tables (the first row is the header); **strong**,
//     *emphasis* and `code` spans; links as [text](absolute-url), resolved against <base> or
//     the final URL, for http, https and mailto only (others keep just their text; a link with
//     no text is dropped); images as ![alt](absolute-url) when they have alt text and an
//     http(s) source. Blocks are separated by one blank line. Text is not escaped, except `[`,
//     `]` and `\` inside link text and image alt text, and `|` inside table cells.
//   - Metadata: property names (`og:…`, `twitter:…`, read from `property`, else `name`) are
//     matched case-insensitively and their suffixes lower-cased; values are trimmed.
//   - Text: each block on its own line(s); list items without markers; table cells separated by
//     a tab; <pre> keeps its line structure and indentation; at most one blank line in a row;
//     lines and the whole trimmed.
//   - A block element inside a link is flattened into the link text; another inline element
//     (span, strong, …) that contains blocks is transparent.
//   - A page nesting more than 512 elements, which x/net/html refuses to parse, is read token by
//     token into a flat document (flatDocument): its text, links and metadata survive, its
//     structure (lists, tables, emphasis) does not. Article and Select read that flat document
//     too.
//   - Article: codeberg.org/readeck/go-readability/v2 (Readability.js 0.6, the maintained fork of
//     go-shiori/go-readability, which is deprecated in its favour) chooses the content; the
//     Markdown rules above write it (see Article).
//   - Select: the selector is cascadia's (the engine goquery wraps; spec/catalog.ParseSelector
//     compiles it for the static check and for nika:fetch alike), matched node by node here so
//     that a cancelled call stops and the output stays bounded (see Select).
package htmltext
