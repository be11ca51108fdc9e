package readmetest

import (
	"fmt"
	"regexp"
	"strings"
)

// block is one fenced code block of a Markdown file.
type block struct {
	file    string // the page, relative to the checkout ("" is README.md)
	lang    string // the info string's first word: "go", "sh", ...
	line    int    // 1-based line of the opening fence
	section string // the last "## " heading above it
	body    string // the lines between the fences, the fence's indentation removed
	prose   string // the text between the previous block (or heading) and this one
	// directive is the body of a "<!-- readme:NAME ... -->" comment that
	// ends on the line right before the fence (blank lines allowed between):
	// name is NAME, text the rest.
	directive     string
	directiveText string
}

var fence = regexp.MustCompile("^( *)```([A-Za-z0-9_+-]*)\\s*$")

// parseBlocks returns the fenced code blocks of md in order. An unclosed
// fence is an error: a README that renders half as code is wrong anyway.
func parseBlocks(md string) ([]block, error) {
	lines := strings.Split(md, "\n")
	var (
		out               []block
		section           string
		prose             []string
		lastDir, lastText string
		dirEnd            = -10
	)
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "## ") {
			section = strings.TrimSpace(strings.TrimPrefix(l, "## "))
			prose = nil
		}
		if strings.HasPrefix(strings.TrimSpace(l), "<!-- readme:") {
			start := i
			text := strings.TrimPrefix(strings.TrimSpace(l), "<!-- readme:")
			for !strings.Contains(lines[i], "-->") {
				i++
				if i == len(lines) {
					return nil, fmt.Errorf("line %d: unclosed <!-- readme: comment", start+1)
				}
				text += "\n" + lines[i]
			}
			text = text[:strings.LastIndex(text, "-->")]
			name, rest, _ := strings.Cut(text, "\n")
			name, arg, _ := strings.Cut(strings.TrimSpace(name), " ")
			if arg != "" {
				rest = arg + "\n" + rest
			}
			lastDir, lastText, dirEnd = name, rest, i
			continue
		}
		m := fence.FindStringSubmatch(l)
		if m == nil {
			prose = append(prose, l)
			continue
		}
		indent, lang := m[1], m[2]
		b := block{lang: lang, line: i + 1, section: section, prose: strings.Join(prose, "\n")}
		prose = nil
		if blankBetween(lines, dirEnd, i) {
			b.directive, b.directiveText = lastDir, lastText
		}
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == "```" {
				closed = true
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if !closed {
			return nil, fmt.Errorf("line %d: unclosed ``` fence", b.line)
		}
		b.body = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out, nil
}

// blankBetween reports whether only blank lines lie strictly between
// lines[from] and lines[to].
func blankBetween(lines []string, from, to int) bool {
	if from < 0 || from >= to {
		return false
	}
	for k := from + 1; k < to; k++ {
		if strings.TrimSpace(lines[k]) != "" {
			return false
		}
	}
	return true
}

// expectation turns the README's rendering of some output into a regular
// expression: "..." and a word abbreviated with "…" ("3f9c…") stand for any
// text, any run of white space for any white space (README lines are
// wrapped), the rest is literal.
func expectation(text string) *regexp.Regexp {
	var re strings.Builder
	re.WriteString("(?s)")
	tok := regexp.MustCompile(`\.\.\.|\S*…|\s+`)
	last := 0
	for _, loc := range tok.FindAllStringIndex(text, -1) {
		re.WriteString(regexp.QuoteMeta(text[last:loc[0]]))
		switch s := text[loc[0]:loc[1]]; {
		case strings.TrimSpace(s) == "":
			re.WriteString(`\s*`)
		default:
			re.WriteString(`.*?`)
		}
		last = loc[1]
	}
	re.WriteString(regexp.QuoteMeta(text[last:]))
	return regexp.MustCompile(re.String())
}

// where names a block's page and line, as file:line.
func (b block) where() string {
	return fmt.Sprintf("%s:%d", b.pageName(), b.line)
}

// pageName is the block's page, README.md when it came from no file.
func (b block) pageName() string {
	if b.file == "" {
		return "README.md"
	}
	return b.file
}
