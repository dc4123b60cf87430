package tools

import (
	"reflect"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has
)

func TestDate(t *testing.T) {
	clock := time.Date(2026, 6, 13, 9, 30, 0, 123456789, time.UTC)
	now := func() time.Time { return clock }
	cases := []struct {
		name string
		args map[string]any
		out  any
		code string
	}{
		// now
		{"now", map[string]any{"op": "now"}, "2026-06-13T09:30:00.123Z", ""},
		{"now in a zone", map[string]any{"op": "now", "timezone": "Europe/Paris"}, "2026-06-13T11:30:00.123+02:00", ""},
		{"now formatted", map[string]any{"op": "now", "format": "date"}, "2026-06-13", ""},
		{"now unix_ms", map[string]any{"op": "now", "format": "unix_ms"}, "1781343000123", ""},
		// add, subtract
		{"add", map[string]any{"op": "add", "date": "2026-06-13T09:30:00Z", "duration": "90m"}, "2026-06-13T11:00:00.000Z", ""},
		{"add days", map[string]any{"op": "add", "date": "2026-06-13T09:30:00Z", "duration": "2d12h"}, "2026-06-15T21:30:00.000Z", ""},
		{"add fractional day", map[string]any{"op": "add", "date": "2026-06-13T00:00:00Z", "duration": "1.5d"}, "2026-06-14T12:00:00.000Z", ""},
		{"add answers in UTC", map[string]any{"op": "add", "date": "2026-06-13T09:30:00.5+02:00", "duration": "1s"}, "2026-06-13T07:30:01.500Z", ""},
		{"subtract", map[string]any{"op": "subtract", "date": "2026-03-01T00:00:00Z", "duration": "1d"}, "2026-02-28T00:00:00.000Z", ""},
		{"subtract negative", map[string]any{"op": "subtract", "date": "2026-03-01T00:00:00Z", "duration": "-1h"}, "2026-03-01T01:00:00.000Z", ""},
		{"past year 9999", map[string]any{"op": "add", "date": "9999-12-31T23:00:00Z", "duration": "2h"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"bad duration", map[string]any{"op": "add", "date": "2026-06-13T09:30:00Z", "duration": "3 weeks"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"bad date", map[string]any{"op": "add", "date": "2026-06-13", "duration": "1h"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"missing duration", map[string]any{"op": "add", "date": "2026-06-13T09:30:00Z"}, nil, "NIKA-INVOKE-002"},
		{"argument of another op", map[string]any{"op": "add", "date": "2026-06-13T09:30:00Z", "duration": "1h", "timezone": "UTC"}, nil, "NIKA-INVOKE-002"},
		// format
		{"format strftime", map[string]any{"op": "format", "date": "2026-06-13T09:05:07.042Z", "format": "%Y-%m-%d %H:%M:%S.%L %j %a %A %b %B %y %z %Z %%"},
			"2026-06-13 09:05:07.042 164 Sat Saturday Jun June 26 +0000 UTC %", ""},
		{"format in zone", map[string]any{"op": "format", "date": "2026-01-13T09:05:07Z", "format": "%H:%M %z %Z", "timezone": "America/New_York"},
			"04:05 -0500 EST", ""},
		{"format rfc3339", map[string]any{"op": "format", "date": "2026-06-13T09:05:07+02:00", "format": "rfc3339"}, "2026-06-13T07:05:07.000Z", ""},
		{"format time", map[string]any{"op": "format", "date": "2026-06-13T09:05:07Z", "format": "time", "timezone": "Asia/Tokyo"}, "18:05:07", ""},
		{"format unix", map[string]any{"op": "format", "date": "1970-01-01T00:00:10.9Z", "format": "unix"}, "10", ""},
		{"format literal text", map[string]any{"op": "format", "date": "2026-06-13T09:05:07Z", "format": "day %d of %B"}, "day 13 of June", ""},
		{"unsupported directive", map[string]any{"op": "format", "date": "2026-06-13T09:05:07Z", "format": "%Q"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"lone percent", map[string]any{"op": "format", "date": "2026-06-13T09:05:07Z", "format": "100%"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"bad timezone", map[string]any{"op": "format", "date": "2026-06-13T09:05:07Z", "format": "date", "timezone": "Nowhere/Land"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"Local refused", map[string]any{"op": "now", "timezone": "Local"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"format needs a format", map[string]any{"op": "format", "date": "2026-06-13T09:05:07Z"}, nil, "NIKA-INVOKE-002"},
		// parse
		{"parse rfc3339 default", map[string]any{"op": "parse", "input": "2026-06-13T11:30:00+02:00"}, "2026-06-13T09:30:00.000Z", ""},
		{"parse into a zone", map[string]any{"op": "parse", "input": "2026-06-13T09:30:00Z", "timezone": "Europe/Paris"}, "2026-06-13T11:30:00.000+02:00", ""},
		{"parse date in zone", map[string]any{"op": "parse", "input": "2026-06-13", "format": "date", "timezone": "Europe/Paris"}, "2026-06-13T00:00:00.000+02:00", ""},
		{"parse unix", map[string]any{"op": "parse", "input": "1781343000", "format": "unix"}, "2026-06-13T09:30:00.000Z", ""},
		{"parse unix_ms", map[string]any{"op": "parse", "input": "-1", "format": "unix_ms"}, "1969-12-31T23:59:59.999Z", ""},
		{"parse strftime", map[string]any{"op": "parse", "input": "13/06/2026 9:05", "format": "%d/%m/%Y %H:%M"}, "2026-06-13T09:05:00.000Z", ""},
		{"parse strftime in zone", map[string]any{"op": "parse", "input": "2026-01-13 09:05", "format": "%Y-%m-%d %H:%M", "timezone": "America/New_York"}, "2026-01-13T09:05:00.000-05:00", ""},
		{"parse strftime offset wins", map[string]any{"op": "parse", "input": "2026-01-13 09:05 +0100", "format": "%Y-%m-%d %H:%M %z", "timezone": "America/New_York"}, "2026-01-13T03:05:00.000-05:00", ""},
		{"parse offset with colon", map[string]any{"op": "parse", "input": "2026-01-13T09:05:00.250-03:30", "format": "%Y-%m-%dT%H:%M:%S.%L%z"}, "2026-01-13T12:35:00.250Z", ""},
		{"parse names", map[string]any{"op": "parse", "input": "Saturday, 13 jun 2026", "format": "%A, %d %b %Y"}, "2026-06-13T00:00:00.000Z", ""},
		{"parse wrong weekday", map[string]any{"op": "parse", "input": "Mon 13 Jun 2026", "format": "%a %d %b %Y"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"parse day of year", map[string]any{"op": "parse", "input": "2024-366", "format": "%Y-%j"}, "2024-12-31T00:00:00.000Z", ""},
		{"parse day of year out of range", map[string]any{"op": "parse", "input": "2026-366", "format": "%Y-%j"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"parse two-digit year", map[string]any{"op": "parse", "input": "99-01-02", "format": "%y-%m-%d"}, "1999-01-02T00:00:00.000Z", ""},
		{"parse zone abbreviation", map[string]any{"op": "parse", "input": "2026-01-13 09:05 EST", "format": "%Y-%m-%d %H:%M %Z", "timezone": "America/New_York"}, "2026-01-13T09:05:00.000-05:00", ""},
		{"parse UTC abbreviation", map[string]any{"op": "parse", "input": "2026-01-13 09:05 UTC", "format": "%Y-%m-%d %H:%M %Z", "timezone": "America/New_York"}, "2026-01-13T04:05:00.000-05:00", ""},
		{"parse unknown abbreviation", map[string]any{"op": "parse", "input": "2026-01-13 09:05 XYZ", "format": "%Y-%m-%d %H:%M %Z"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"parse February 30", map[string]any{"op": "parse", "input": "2026-02-30", "format": "%Y-%m-%d"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"parse hour 24", map[string]any{"op": "parse", "input": "24:00", "format": "%H:%M"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"parse trailing text", map[string]any{"op": "parse", "input": "2026-06-13x", "format": "%Y-%m-%d"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"parse mismatch", map[string]any{"op": "parse", "input": "June 2026", "format": "%Y-%m"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"parse named mismatch", map[string]any{"op": "parse", "input": "13/06/2026", "format": "date"}, nil, "NIKA-BUILTIN-DATE-001"},
		{"parse rfc3339 without offset", map[string]any{"op": "parse", "input": "2026-06-13T09:30:00"}, nil, "NIKA-BUILTIN-DATE-001"},
		// diff
		{"diff", map[string]any{"op": "diff", "from": "2026-06-13T09:30:00Z", "to": "2026-06-13T11:30:00.5+02:00"}, 500, ""},
		{"diff negative", map[string]any{"op": "diff", "from": "2026-06-14T00:00:00Z", "to": "2026-06-13T00:00:00Z"}, -86400000, ""},
		{"diff truncates toward zero", map[string]any{"op": "diff", "from": "2026-06-13T00:00:00.0009Z", "to": "2026-06-13T00:00:00.0011Z"}, 0, ""},
		{"diff beyond 292 years", map[string]any{"op": "diff", "from": "0001-01-01T00:00:00Z", "to": "9999-12-31T23:59:59.999Z"}, 315537897599999, ""},
		{"diff bad date", map[string]any{"op": "diff", "from": "yesterday", "to": "2026-06-13T00:00:00Z"}, nil, "NIKA-BUILTIN-DATE-001"},
		// op
		{"bad op", map[string]any{"op": "tomorrow"}, nil, "NIKA-INVOKE-002"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec(t, Call{Name: "nika:date", Args: c.args, Now: now})
			if codeOf(t, err) != c.code {
				t.Fatalf("err = %v, want code %q", err, c.code)
			}
			if !reflect.DeepEqual(out, c.out) {
				t.Errorf("output = %#v, want %#v", out, c.out)
			}
		})
	}
}

// Every strftime output parses back to the same instant (to the millisecond) with the same
// pattern.
func TestDateFormatParseRoundTrip(t *testing.T) {
	patterns := []string{
		"%Y-%m-%dT%H:%M:%S.%L%z",
		"%a, %d %b %Y %H:%M:%S.%L %z",
		"%A %B %d %Y %H.%M.%S.%L %Z",
		"%Y %j %H%M%S%L %z",
	}
	dates := []string{"2026-06-13T09:05:07.042Z", "2024-02-29T23:59:59.999+05:30", "1999-12-31T00:00:00.000-08:00"}
	for _, p := range patterns {
		for _, d := range dates {
			for _, tz := range []string{"UTC", "Europe/Paris", "Asia/Kolkata"} {
				formatted, err := exec(t, Call{Name: "nika:date", Args: map[string]any{"op": "format", "date": d, "format": p, "timezone": tz}})
				if err != nil {
					t.Fatal(err)
				}
				parsed, err := exec(t, Call{Name: "nika:date", Args: map[string]any{"op": "parse", "input": formatted, "format": p, "timezone": tz}})
				if err != nil {
					t.Fatalf("%s in %s: %q does not parse back: %v", p, tz, formatted, err)
				}
				diff, err := exec(t, Call{Name: "nika:date", Args: map[string]any{"op": "diff", "from": d, "to": parsed}})
				if err != nil || diff != 0 {
					t.Errorf("%s in %s: %s → %q → %v (diff %v, %v)", p, tz, d, formatted, parsed, diff, err)
				}
			}
		}
	}
}
