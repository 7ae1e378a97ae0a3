package coverage

import (
	"regexp/syntax"
	"strings"
	"unicode"
)

// A goal is a sometimes property no trial has reached yet: a pattern some
// line should match. Before a line does, how close a line came is the
// only measure there is, and what a pattern says of the lines it wants is
// its literal text: the words of a goal are its pattern's literal words,
// and a line is as close as the number of them it holds in order ("migration
// started" holds one of "migration finished"'s two). Related lines share
// their vocabulary (a snapshot sent, then installed; an election started,
// then won), and a word is what a log line keeps whatever its values.

// minGoalWord is the shortest word of a pattern a goal keeps: "to", "in"
// and their like are in every other line.
const minGoalWord = 3

// maxLineWords bounds the words of a line a goal is matched on.
const maxLineWords = 512

// GoalWords are the words of a pattern's literal text, in order: the
// runs of letters of minGoalWord or more in its literals, lower-cased, a
// literal ending at whatever is not one (a class, a repetition, an
// alternation, whose own literals are words of their own). nil for a
// pattern without one (`^\d+$`), or one that does not parse.
func GoalWords(pattern string) []string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	var words []string
	var run []rune
	flush := func() {
		words = append(words, letterWords(string(run), minGoalWord)...)
		run = run[:0]
	}
	var walk func(re *syntax.Regexp)
	walk = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpLiteral:
			run = append(run, re.Rune...)
		case syntax.OpConcat, syntax.OpCapture:
			for _, sub := range re.Sub {
				walk(sub)
			}
		default:
			flush()
			for _, sub := range re.Sub {
				walk(sub)
				flush()
			}
		}
	}
	walk(re)
	flush()
	return words
}

// letterWords are the runs of letters in s of at least least letters,
// lower-cased (at most maxLineWords of them).
func letterWords(s string, least int) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) {
		if len([]rune(w)) >= least {
			out = append(out, strings.ToLower(w))
			if len(out) == maxLineWords {
				break
			}
		}
	}
	return out
}

// Near is how close a line came to a goal of these words: how many of
// them its words hold in the same order (a word of the line holds a goal's
// word when it contains it: "migrations" holds "migration", as a pattern's
// literal cut by a class, "igration" of "[Mm]igration", is held by the
// line's "Migration").
func Near(words []string, line string) int {
	if len(words) == 0 {
		return 0
	}
	lw := letterWords(line, 1)
	n, _ := inOrder(len(words), len(lw), func(i, j int) bool { return strings.Contains(lw[j], words[i]) })
	return n
}
