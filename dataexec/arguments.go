package dataexec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// ExplainArguments says in words why args (a tool call's arguments)
// break the JSON Schema schema (an [Action]'s Input, or a remote tool's):
// the first rule a value breaks, named by its path ("limit must be at
// least 1", "filters[0].op must be one of eq, ne, ..."), or "" when none
// does, or when schema is no schema. Both adapters answer an invalid call
// with it, so an MCP client and the chat read the same words: the MCP
// server when the go-sdk refuses a call (its own message is the
// validator's: "limit: minimum: 0/1 is less than 1.000000", null as
// "<invalid reflect.Value>", no index in a path), and Ask when a tool
// call does not match its tool's schema. It reads the keywords the
// actions' schemas use: type, enum, the numeric, string, array and
// object bounds, properties, required, additionalProperties, items and
// anyOf.
func ExplainArguments(schema, args json.RawMessage) string {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return ""
	}
	return argumentError(&s, args)
}

// argumentError is ExplainArguments on a parsed schema.
func argumentError(s *jsonschema.Schema, args json.RawMessage) string {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "arguments must be a JSON object"
	}
	if _, ok := v.(map[string]any); !ok {
		return "arguments must be an object"
	}
	return check(s, v, "")
}

// check returns why v, at path, breaks s, or "".
func check(s *jsonschema.Schema, v any, path string) string {
	if s == nil {
		return ""
	}
	subject := path
	if subject == "" {
		subject = "arguments"
	}
	if s.Not != nil && isEmpty(s.Not) {
		return subject + " is not allowed"
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return hasType(v, t) }) {
		msg := subject + " must be " + typeWords(types)
		if v == nil {
			msg += ", not null"
		}
		return msg
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool {
		return fmt.Sprint(e) == fmt.Sprint(v) && hasType(v, "string") == hasType(e, "string")
	}) {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = fmt.Sprint(e)
		}
		return subject + " must be one of " + strings.Join(vals, ", ")
	}
	if len(s.AnyOf) > 0 {
		var first string
		for _, b := range s.AnyOf {
			msg := check(b, v, path)
			if msg == "" {
				first = ""
				break
			}
			if first == "" {
				first = msg
			}
		}
		if first != "" {
			return first
		}
	}
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		if s.Minimum != nil && f < *s.Minimum {
			return subject + " must be at least " + formatNumber(*s.Minimum)
		}
		if s.Maximum != nil && f > *s.Maximum {
			return subject + " must be at most " + formatNumber(*s.Maximum)
		}
	case string:
		n := utf8.RuneCountInString(x)
		if s.MinLength != nil && n < *s.MinLength {
			if *s.MinLength == 1 {
				return subject + " must not be empty"
			}
			return fmt.Sprintf("%s must be at least %d characters", subject, *s.MinLength)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			return fmt.Sprintf("%s must be at most %d characters", subject, *s.MaxLength)
		}
	case []any:
		if s.MinItems != nil && len(x) < *s.MinItems {
			return fmt.Sprintf("%s must have at least %s", subject, plural(*s.MinItems, "item"))
		}
		if s.MaxItems != nil && len(x) > *s.MaxItems {
			return fmt.Sprintf("%s must have at most %s", subject, plural(*s.MaxItems, "item"))
		}
		for i, item := range x {
			if msg := check(s.Items, item, fmt.Sprintf("%s[%d]", path, i)); msg != "" {
				return msg
			}
		}
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := x[name]; !ok {
				return member(path, name) + " is required"
			}
		}
		if s.MinProperties != nil && len(x) < *s.MinProperties {
			return fmt.Sprintf("%s must have at least %s", subject, plural(*s.MinProperties, "property"))
		}
		if s.MaxProperties != nil && len(x) > *s.MaxProperties {
			return fmt.Sprintf("%s must have at most %s", subject, plural(*s.MaxProperties, "property"))
		}
		names := make([]string, 0, len(x))
		for name := range x {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			sub, ok := s.Properties[name]
			if !ok && s.AdditionalProperties != nil {
				if isEmpty(s.AdditionalProperties.Not) {
					if path == "" {
						return name + " is not a known argument"
					}
					return member(path, name) + " is not a known property"
				}
				sub = s.AdditionalProperties
			}
			if msg := check(sub, x[name], member(path, name)); msg != "" {
				return msg
			}
		}
	}
	return ""
}

// isEmpty reports whether s is the empty schema ({}, true); additional
// properties: false reads as {"not": {}}.
func isEmpty(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	b, err := json.Marshal(s)
	return err == nil && (string(b) == "true" || string(b) == "{}")
}

// hasType reports whether v, a value decoded with UseNumber, is of JSON
// Schema type t; an integer is a number without a fractional part.
func hasType(v any, t string) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case json.Number:
		if t == "number" {
			return true
		}
		f, err := x.Float64()
		return t == "integer" && err == nil && f == math.Trunc(f)
	case []any:
		return t == "array"
	case map[string]any:
		return t == "object"
	}
	return false
}

// typeWords names types for a message: "an integer", "a string, number,
// boolean or null".
func typeWords(types []string) string {
	words := slices.Clone(types)
	switch len(words) {
	case 1:
		if words[0] == "null" {
			return "null"
		}
		if strings.ContainsRune("aeiou", rune(words[0][0])) {
			return "an " + words[0]
		}
		return "a " + words[0]
	}
	last := words[len(words)-1]
	return "a " + strings.Join(words[:len(words)-1], ", ") + " or " + last
}

func member(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return strconv.Itoa(n) + " " + strings.TrimSuffix(noun, "y") + "ies"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
