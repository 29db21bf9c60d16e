package mock

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// query is a question in the user's own words as the script reads it:
// its words, and what it asks for beyond a dataset (a trend, the most or
// least, a comparison, a period, a breakdown).
type query struct {
	text   string
	tokens []string // every word, lower case
	// content are the words that name what to look at: not stop words,
	// not what the question asks about it ("trend", "most"), not numbers.
	content []string
	trend   bool   // how it changes over time
	most    bool   // which is the largest
	least   bool   // which is the smallest
	compare string // "compare … to last quarter": the unit (week, month, quarter, year)
	// period is "last 8 weeks", "only the last month": how many units of
	// which (day, week, month, quarter, year), 0 for none.
	periodN    int
	periodUnit string
	breakdown  string // "by country", "which country": the field named
	foreign    bool   // not English, as far as the script can tell
	greeting   bool   // "hello", "what can you do?": nothing to look at
}

var (
	tokenRe      = regexp.MustCompile(`[\p{L}\p{N}]+`)
	lastUnit     = regexp.MustCompile(`(?i)\b(?:last|past|previous|prior) (day|week|month|quarter|year)\b`)
	compareRe    = regexp.MustCompile(`(?i)\b(?:compare|compared|vs\.?|versus|than|against)\b.*?\b(?:last|previous|prior|a) (week|month|quarter|year)\b`)
	greetingRe   = regexp.MustCompile(`(?i)^\W*(?:hi|hello|hey|hello again|thanks|thank you|ok|okay|help|what can you do|who are you|what are you)\b[\s\W]*(?:again)?[\s\W]*$`)
	foreignMarks = regexp.MustCompile(`[¿¡ñáéíóúàèìòùâêîôûäöüßçãõ]`)
)

// stop are words that name nothing to look at.
var stop = set("a", "an", "the", "is", "are", "was", "were", "be", "been", "how", "what", "whats", "which", "who", "whom", "when",
	"where", "why", "our", "my", "we", "us", "me", "you", "your", "i", "it", "its", "this", "that", "these", "those", "them",
	"show", "give", "tell", "list", "get", "got", "see", "let", "look", "find", "display", "draw", "plot", "chart", "graph",
	"has", "have", "had", "did", "do", "does", "doing", "going", "of", "in", "on", "for", "to", "by", "per", "each", "every",
	"with", "from", "and", "or", "about", "please", "can", "could", "would", "should", "will", "at", "as", "into", "only",
	"just", "now", "then", "there", "here", "some", "any", "all", "many", "much", "number", "numbers", "data", "dataset",
	"datasets", "so", "far", "up", "down", "again", "also", "like", "there", "one", "time", "times", "over", "recent",
	"recently", "currently", "current", "today", "yesterday", "same", "than", "total", "amount", "value", "values", "been",
	"think", "know", "want", "need", "make", "made", "are", "a", "day", "days", "week", "weeks", "month", "months",
	"quarter", "quarters", "year", "years", "last", "past", "previous", "prior", "next", "this", "put", "add", "place")

// intent are words that say what to do with the data, not which data.
var (
	trendWords = set("trend", "trends", "trending", "grow", "grows", "growing", "growth", "grew", "change", "changed", "changes",
		"evolve", "evolving", "evolution", "rise", "rising", "rose", "fall", "falling", "fell", "history", "weekly", "daily", "monthly")
	mostWords  = set("most", "top", "highest", "best", "largest", "biggest", "leading", "leads", "lead", "max", "maximum", "more")
	leastWords = set("least", "lowest", "fewest", "worst", "smallest", "bottom", "min", "minimum", "less", "fewer")
	otherWords = set("compare", "comparison", "vs", "versus", "against", "trend", "split", "broken", "break", "breakdown")
)

// foreignWords are common words of Spanish, French, German, Portuguese
// and Italian that English does not use: two of them mark a question
// the script does not read.
var foreignWords = set("el", "la", "los", "las", "del", "por", "que", "qué", "cuál", "cuáles", "cuántos", "cuántas", "cómo",
	"una", "es", "son", "und", "der", "die", "das", "ist", "wie", "viele", "le", "les", "des", "est", "combien", "quel",
	"quels", "os", "não", "quanto", "quantos", "il", "gli", "sono", "nostro", "nuestro", "nuestros", "tuvimos", "hay",
	"semana", "mes", "año", "registros", "ventas", "ingresos", "woche", "monat", "semaine", "mois", "cuál", "cual",
	"cuanto", "cuantos", "como", "tuvimos", "hubo", "nuestra", "nuestras", "wieviele", "welche", "quelle", "quelles")

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// parse reads a question.
func parse(text string) query {
	q := query{text: text}
	lower := strings.ToLower(text)
	q.tokens = tokenRe.FindAllString(lower, -1)
	q.greeting = greetingRe.MatchString(text)
	foreign := 0
	for _, t := range q.tokens {
		if foreignWords[t] {
			foreign++
		}
	}
	q.foreign = foreign >= 2 || foreign >= 1 && foreignMarks.MatchString(lower)
	for _, t := range q.tokens {
		switch {
		case trendWords[t]:
			q.trend = true
		case mostWords[t]:
			q.most = true
		case leastWords[t]:
			q.least = true
		}
		if stop[t] || trendWords[t] || mostWords[t] || leastWords[t] || otherWords[t] || isNumber(t) {
			continue
		}
		q.content = append(q.content, t)
	}
	if strings.Contains(lower, "over time") {
		q.trend = true
	}
	if m := compareRe.FindStringSubmatch(lower); m != nil {
		q.compare = m[1]
	} else if m := lastPeriods.FindStringSubmatch(lower); m != nil {
		q.periodN, q.periodUnit = atoi(m[1]), m[2]
	} else if m := lastUnit.FindStringSubmatch(lower); m != nil {
		q.periodN, q.periodUnit = 1, m[1]
	}
	if m := breakdown.FindStringSubmatch(lower); m != nil && !stop[m[1]] {
		q.breakdown = strings.TrimSuffix(m[1], "s")
		if m[1] == "countries" {
			q.breakdown = "country"
		}
	}
	return q
}

func isNumber(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsDigit(r) }) < 0
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}

// synonyms are the other names a workspace gives a word: revenue is
// tracked as MRR here.
var synonyms = map[string][]string{
	"revenue": {"mrr", "arr"}, "income": {"mrr", "revenue"}, "sales": {"mrr", "revenue"}, "recurring": {"mrr"},
	"signup": {"signups"}, "sign": {"signups"}, "registrations": {"signups"}, "registration": {"signups"}, "joins": {"signups"},
	"pageviews": {"pages", "pageviews"}, "views": {"pages", "pageviews"}, "visits": {"pages", "visitors"},
	"visitors": {"pages"}, "traffic": {"pages", "visitors"}, "page": {"pages"},
	"nations": {"country"}, "geography": {"country"}, "geo": {"country"},
	"support": {"tickets"}, "issues": {"tickets"},
}

// timeTokens in a dataset's name say it is a series over time.
var timeTokens = set("weekly", "daily", "monthly", "quarterly", "yearly", "week", "day", "month", "quarter", "year")

// nameTokens are a name's words that matter for matching.
func nameTokens(name string) []string {
	var out []string
	for _, t := range tokenRe.FindAllString(strings.ToLower(name), -1) {
		if t != "by" && t != "of" && t != "the" && t != "and" && t != "per" {
			out = append(out, t)
		}
	}
	return out
}

// matchKind is how a word of a question matched a word of a name.
type matchKind int

const (
	noMatch matchKind = iota
	exactMatch
	synonymMatch
	typoMatch
)

// match compares a question's word with a name's word: the same word
// (a plural, or one the start of the other: "week" and "weekly"), a
// synonym ("revenue" for "mrr"), or a typo of it ("sigups").
func match(word, token string) matchKind {
	w, t := singular(word), singular(token)
	switch {
	case w == t:
		return exactMatch
	case len(w) >= 4 && len(t) >= 4 && (strings.HasPrefix(t, w) || strings.HasPrefix(w, t)):
		return exactMatch
	case slices.Contains(synonyms[word], token) || slices.Contains(synonyms[word], t):
		return synonymMatch
	}
	if d := distance(w, t); len(w) >= 5 && d == 1 || len(w) >= 8 && d == 2 {
		return typoMatch
	}
	return noMatch
}

// singular is a word without its plural ending: "countries" → "country",
// "signups" → "signup".
func singular(w string) string {
	if strings.HasSuffix(w, "ies") && len(w) > 4 {
		return w[:len(w)-3] + "y"
	}
	if strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		return w[:len(w)-1]
	}
	return w
}

// stem is what a word is searched by, so that a name's singular and
// plural both hold it: "countries" and "country" → "countr", "signups"
// → "signup".
func stem(w string) string {
	w = singular(w)
	if strings.HasSuffix(w, "y") && len(w) > 4 {
		return w[:len(w)-1]
	}
	return w
}

// distance is the edit distance between a and b (insertions, deletions,
// substitutions and swaps of neighbours).
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range y {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			c := 1
			if x[i-1] == y[j-1] {
				c = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+c)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// hit is one word of a question that matched a name.
type hit struct {
	word, token string
	kind        matchKind
}

// candidate is a dataset of the search results, scored against a
// question.
type candidate struct {
	ref   map[string]any
	name  string
	hits  []hit
	score int
	whole bool // every word of its name matched
}

// rank scores the datasets among search results against q, best first:
// two points for each word of the question found in the name, one off
// for each word of the name the question does not have; a series over
// time ("Weekly …") counts as asked for when the question asks for a
// trend. Only candidates with a hit are returned; ties keep the
// results' order.
func rank(results []any, q query) []candidate {
	var out []candidate
	for _, r := range results {
		m, _ := r.(map[string]any)
		if m == nil || m["type"] != "dataset" {
			continue
		}
		name, _ := m["name"].(string)
		c := candidate{ref: m, name: name}
		tokens := nameTokens(name)
		used := map[string]bool{}
		for _, w := range q.tokens {
			if stop[w] && !timeTokens[strings.TrimSuffix(w, "s")] || isNumber(w) {
				continue
			}
			for _, t := range tokens {
				if used[t] {
					continue
				}
				if k := match(w, t); k != noMatch {
					c.hits = append(c.hits, hit{w, t, k})
					used[t] = true
					break
				}
			}
		}
		for _, t := range tokens {
			if !used[t] && q.trend && timeTokens[t] {
				used[t] = true // "Weekly" answers "trending"
				c.score++
			}
		}
		if len(c.hits) == 0 {
			continue
		}
		c.score += 2 * len(c.hits)
		for _, h := range c.hits {
			if h.word == h.token {
				c.score++ // the very word beats its plural
			}
		}
		c.whole = true
		for _, t := range tokens {
			if !used[t] {
				c.score--
				c.whole = false
			}
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b candidate) int { return b.score - a.score })
	return out
}

// why says in words why c matched: “signups”, “revenue” (tracked as MRR
// here), “sigups” (read as signups).
func (c candidate) why() string {
	var parts []string
	for _, h := range c.hits {
		switch h.kind {
		case synonymMatch:
			parts = append(parts, "“"+h.word+"” (tracked as "+c.name+" here)")
		case typoMatch:
			parts = append(parts, "“"+h.word+"” (read as “"+h.token+"”)")
		default:
			parts = append(parts, "“"+h.word+"”")
		}
	}
	return andList(parts)
}

// andList is "a", "a and b", "a, b and c".
func andList(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// searchWord is the word a question is searched for first: its longest
// content word, as its stem ("countr" finds "country" and "countries")
// or a synonym's first name ("revenue" → "mrr"), "" for none.
func searchWord(q query) string {
	best := ""
	for _, w := range q.content {
		if q.foreign && foreignWords[w] {
			continue
		}
		if len([]rune(w)) > len([]rune(best)) {
			best = w
		}
	}
	if s := synonyms[best]; len(s) > 0 {
		return s[0]
	}
	return stem(best)
}

// namesScope reports whether the question named c's scope: it matched a
// word of c's name that the unscoped dataset's name does not have ("EU"
// of "EU signups by country"), or, with no unscoped dataset, every word
// of c's name.
func (c candidate) namesScope(unscoped map[string]any) bool {
	if unscoped == nil {
		return c.whole
	}
	other := nameTokens(fmt.Sprint(unscoped["name"]))
	for _, h := range c.hits {
		if !slices.Contains(other, h.token) {
			return true
		}
	}
	return false
}
