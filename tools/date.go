package tools

import (
	"context"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/nikahq/nika/spec"
	"github.com/nikahq/nika/spec/catalog"
)

// nika:date (LANGUAGE.md §7.4). Inputs are RFC 3339; output timestamps are RFC 3339 with
// milliseconds in `timezone` (UTC by default; add and subtract, which take no timezone, answer
// in UTC). Durations are Go durations that may use `d` (catalog.ParseDateDuration), formats are
// names or strftime patterns (catalog.CheckDateFormat), so the static check and the runtime
// agree.

const codeDate = spec.CodeBuiltinDate

// stampLayout is the output form of every timestamp, and of format `rfc3339`.
const stampLayout = "2006-01-02T15:04:05.000Z07:00"

func runDate(_ context.Context, in *invocation) (any, error) {
	op, err := in.str("op", "")
	if err != nil {
		return nil, err
	}
	tz, err := in.str("timezone", "UTC")
	if err != nil {
		return nil, err
	}
	loc, err := loadZone(tz)
	if err != nil {
		return nil, dateError("timezone", tz, err.Error())
	}
	switch op {
	case "now":
		t := in.now().In(loc)
		if !in.has("format") {
			return stamp(t)
		}
		f, err := in.str("format", "")
		if err != nil {
			return nil, err
		}
		return formatDate(t, f)
	case "add", "subtract":
		t, err := in.timestamp("date")
		if err != nil {
			return nil, err
		}
		s, err := in.str("duration", "")
		if err != nil {
			return nil, err
		}
		d, err := catalog.ParseDateDuration(s)
		if err != nil {
			return nil, dateError("duration", s, "is not a duration (a Go duration that may use `d` for 24h)")
		}
		if op == "subtract" {
			d = -d
		}
		return stamp(t.Add(d).In(time.UTC))
	case "format":
		t, err := in.timestamp("date")
		if err != nil {
			return nil, err
		}
		f, err := in.str("format", "")
		if err != nil {
			return nil, err
		}
		return formatDate(t.In(loc), f)
	case "parse":
		s, err := in.str("input", "")
		if err != nil {
			return nil, err
		}
		f, err := in.str("format", "rfc3339")
		if err != nil {
			return nil, err
		}
		if err := catalog.CheckDateFormat(f); err != nil {
			return nil, dateError("format", f, "is not a date format: "+err.Error())
		}
		t, err := parseDate(s, f, loc)
		if err != nil {
			return nil, dateError("input", s, err.Error())
		}
		return stamp(t.In(loc))
	case "diff":
		from, err := in.timestamp("from")
		if err != nil {
			return nil, err
		}
		to, err := in.timestamp("to")
		if err != nil {
			return nil, err
		}
		return diffMillis(from, to), nil
	}
	return nil, argsError(in.call.Name, []violation{{Path: "/op", Message: fmt.Sprintf("unknown op %q", op)}})
}

func dateError(arg, value, reason string) *spec.Error {
	return spec.NewError(codeDate, fmt.Sprintf("`%s` %q %s", arg, value, reason), map[string]any{"arg": arg, "value": value})
}

// loadZone loads an IANA zone; "Local" is refused, as statically, because it changes with the
// machine.
func loadZone(name string) (*time.Location, error) {
	switch name {
	case "":
		return nil, fmt.Errorf("is empty")
	case "Local":
		return nil, fmt.Errorf("depends on the machine running the workflow; use an IANA name")
	case "UTC":
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("is not a known IANA time zone")
	}
	return loc, nil
}

// timestamp reads an RFC 3339 argument.
func (in *invocation) timestamp(name string) (time.Time, error) {
	s, err := in.str(name, "")
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, dateError(name, s, "is not an RFC 3339 timestamp")
	}
	return t, nil
}

// stamp renders an output timestamp; RFC 3339 has four-digit years only.
func stamp(t time.Time) (any, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, spec.NewError(codeDate, fmt.Sprintf("the result is in year %d, outside the years 0000-9999 of RFC 3339", y), nil)
	}
	return t.Format(stampLayout), nil
}

// diffMillis is to − from in whole milliseconds, truncated toward zero, exact over any span.
func diffMillis(from, to time.Time) int {
	ns := new(big.Int).Mul(big.NewInt(to.Unix()-from.Unix()), big.NewInt(1e9))
	ns.Add(ns, big.NewInt(int64(to.Nanosecond()-from.Nanosecond())))
	return int(ns.Quo(ns, big.NewInt(1e6)).Int64())
}

// ---- format ----

func formatDate(t time.Time, f string) (any, error) {
	if err := catalog.CheckDateFormat(f); err != nil {
		return nil, dateError("format", f, "is not a date format: "+err.Error())
	}
	switch f {
	case "rfc3339":
		return stamp(t)
	case "date":
		return t.Format("2006-01-02"), nil
	case "time":
		return t.Format("15:04:05"), nil
	case "unix":
		return strconv.FormatInt(t.Unix(), 10), nil
	case "unix_ms":
		return strconv.FormatInt(t.UnixMilli(), 10), nil
	}
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", (t.Year()%100+100)%100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'L':
			fmt.Fprintf(&b, "%03d", t.Nanosecond()/1e6)
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case '%':
			b.WriteByte('%')
		}
	}
	return b.String(), nil
}

// ---- parse ----

// parseDate parses input by a named format or a strftime pattern. loc applies when the input
// carries no offset. Fields a pattern leaves out default as Go's layouts do: year 0, January 1,
// midnight.
func parseDate(input, f string, loc *time.Location) (time.Time, error) {
	switch f {
	case "rfc3339":
		t, err := time.Parse(time.RFC3339, input)
		if err != nil {
			return time.Time{}, fmt.Errorf("is not an RFC 3339 timestamp")
		}
		return t, nil
	case "date", "time":
		layout := "2006-01-02"
		if f == "time" {
			layout = "15:04:05"
		}
		t, err := time.ParseInLocation(layout, input, loc)
		if err != nil {
			return time.Time{}, fmt.Errorf("does not match the format `%s` (%s)", f, layout)
		}
		return t, nil
	case "unix", "unix_ms":
		n, err := strconv.ParseInt(input, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("is not a `%s` timestamp (a decimal integer)", f)
		}
		if f == "unix" {
			return time.Unix(n, 0), nil
		}
		return time.UnixMilli(n), nil
	}
	return strptime(input, f, loc)
}

var (
	weekdayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	monthNames   = []string{"January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December"}
)

type parsed struct {
	year, month, day, hour, min, sec, ms, yday int
	hasMonth, hasDay, hasYday                  bool
	weekday                                    int // -1 when absent
	offset                                     *int
	abbrev                                     string
}

// strptime parses input against a strftime pattern of the §7.4 directives. Numbers take 1 or 2
// digits (%Y exactly 4, %L exactly 3, %j 1 to 3); names match case-insensitively, full or
// abbreviated; %z takes Z, ±hhmm or ±hh:mm; %Z takes UTC, GMT, or the abbreviation `timezone`
// uses at that time.
func strptime(input, f string, loc *time.Location) (time.Time, error) {
	p := parsed{month: 1, day: 1, weekday: -1}
	mismatch := func() (time.Time, error) {
		return time.Time{}, fmt.Errorf("does not match the format %q", f)
	}
	s := input
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			if s == "" || s[0] != f[i] {
				return mismatch()
			}
			s = s[1:]
			continue
		}
		i++
		var ok bool
		switch f[i] {
		case 'Y':
			p.year, s, ok = digits(s, 4, 4)
		case 'y':
			p.year, s, ok = digits(s, 2, 2)
			if p.year < 69 {
				p.year += 2000
			} else {
				p.year += 1900
			}
		case 'm':
			p.month, s, ok = digits(s, 1, 2)
			p.hasMonth = true
		case 'd':
			p.day, s, ok = digits(s, 1, 2)
			p.hasDay = true
		case 'H':
			p.hour, s, ok = digits(s, 1, 2)
		case 'M':
			p.min, s, ok = digits(s, 1, 2)
		case 'S':
			p.sec, s, ok = digits(s, 1, 2)
		case 'L':
			p.ms, s, ok = digits(s, 3, 3)
		case 'j':
			p.yday, s, ok = digits(s, 1, 3)
			p.hasYday = true
		case 'a', 'A':
			p.weekday, s, ok = matchName(s, weekdayNames)
		case 'b', 'B':
			p.month, s, ok = matchName(s, monthNames)
			p.month++
			p.hasMonth = true
		case 'z':
			var off int
			off, s, ok = zoneOffset(s)
			p.offset = &off
		case 'Z':
			j := 0
			for j < len(s) && (s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z') {
				j++
			}
			p.abbrev, s, ok = s[:j], s[j:], j > 0
		case '%':
			ok = s != "" && s[0] == '%'
			if ok {
				s = s[1:]
			}
		}
		if !ok {
			return mismatch()
		}
	}
	if s != "" {
		return time.Time{}, fmt.Errorf("has extra text %q after the format %q", s, f)
	}
	return p.build(loc)
}

func (p *parsed) build(loc *time.Location) (time.Time, error) {
	switch {
	case p.month < 1 || p.month > 12:
		return time.Time{}, fmt.Errorf("has month %d", p.month)
	case p.hour > 23 || p.min > 59 || p.sec > 59:
		return time.Time{}, fmt.Errorf("has an invalid time of day %02d:%02d:%02d", p.hour, p.min, p.sec)
	}
	zone := loc
	switch {
	case p.offset != nil:
		zone = time.FixedZone("", *p.offset)
	case p.abbrev != "":
		switch strings.ToUpper(p.abbrev) {
		case "UTC", "GMT", "Z":
			zone = time.UTC
		}
	}
	daysIn := func(m int) int { return time.Date(p.year, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day() }
	if p.hasYday && !p.hasMonth && !p.hasDay {
		if p.yday < 1 || p.yday > time.Date(p.year, 12, 31, 0, 0, 0, 0, time.UTC).YearDay() {
			return time.Time{}, fmt.Errorf("has day of year %d", p.yday)
		}
		t := time.Date(p.year, 1, p.yday, p.hour, p.min, p.sec, p.ms*1e6, zone)
		return p.verify(t, loc)
	}
	if p.day < 1 || p.day > daysIn(p.month) {
		return time.Time{}, fmt.Errorf("has day %d of month %d", p.day, p.month)
	}
	t := time.Date(p.year, time.Month(p.month), p.day, p.hour, p.min, p.sec, p.ms*1e6, zone)
	if p.hasYday && t.YearDay() != p.yday {
		return time.Time{}, fmt.Errorf("has day of year %d, which is not %04d-%02d-%02d", p.yday, p.year, p.month, p.day)
	}
	return p.verify(t, loc)
}

// verify checks the parts that only the built time can confirm: the weekday and a zone
// abbreviation other than UTC or GMT.
func (p *parsed) verify(t time.Time, loc *time.Location) (time.Time, error) {
	if p.weekday >= 0 && int(t.Weekday()) != p.weekday {
		return time.Time{}, fmt.Errorf("says %s, but %s is a %s", weekdayNames[p.weekday], t.Format("2006-01-02"), t.Weekday())
	}
	if p.offset == nil && p.abbrev != "" {
		switch strings.ToUpper(p.abbrev) {
		case "UTC", "GMT", "Z":
		default:
			if abbr, _ := t.In(loc).Zone(); !strings.EqualFold(abbr, p.abbrev) {
				return time.Time{}, fmt.Errorf("has the zone abbreviation %q, which is not UTC, GMT or the abbreviation of the timezone (%s)", p.abbrev, abbr)
			}
		}
	}
	return t, nil
}

// digits reads between lo and hi decimal digits.
func digits(s string, lo, hi int) (int, string, bool) {
	n, v := 0, 0
	for n < hi && n < len(s) && s[n] >= '0' && s[n] <= '9' {
		v = v*10 + int(s[n]-'0')
		n++
	}
	if n < lo {
		return 0, s, false
	}
	return v, s[n:], true
}

// matchName matches a full name or its three-letter abbreviation, case-insensitively.
func matchName(s string, names []string) (int, string, bool) {
	for i, n := range names {
		if len(s) >= len(n) && strings.EqualFold(s[:len(n)], n) {
			return i, s[len(n):], true
		}
	}
	for i, n := range names {
		if len(s) >= 3 && strings.EqualFold(s[:3], n[:3]) {
			return i, s[3:], true
		}
	}
	return 0, s, false
}

// zoneOffset reads Z, ±hhmm or ±hh:mm, in seconds east of UTC.
func zoneOffset(s string) (int, string, bool) {
	if s != "" && (s[0] == 'Z' || s[0] == 'z') {
		return 0, s[1:], true
	}
	if s == "" || s[0] != '+' && s[0] != '-' {
		return 0, s, false
	}
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	h, rest, ok := digits(s[1:], 2, 2)
	if !ok {
		return 0, s, false
	}
	if rest != "" && rest[0] == ':' {
		rest = rest[1:]
	}
	m, rest, ok := digits(rest, 2, 2)
	if !ok || h > 23 || m > 59 {
		return 0, s, false
	}
	return sign * (h*3600 + m*60), rest, true
}
