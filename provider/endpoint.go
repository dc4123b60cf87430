package provider

import (
	"errors"
	"strings"

	"github.com/nikahq/nika/spec"
)

// Endpoint reads the key and the base URL of provider row from the environment seen through
// lookup (LANGUAGE.md §6.1): the key from the first of row.KeyVars that is set, the base URL
// from the first of row.BaseURLVars, else row.BaseURL. A row whose key is required and unset is
// an error naming the variables, never a value: "<name>: no API key: set NIKA_X_API_KEY (or
// X_API_KEY)".
func Endpoint(row spec.Provider, lookup func(string) (string, bool)) (key, baseURL string, err error) {
	key = Env(lookup, row.KeyVars...)
	if key == "" && row.KeyRequired {
		msg := row.Name + ": no API key: set " + row.KeyVars[0]
		if len(row.KeyVars) > 1 {
			msg += " (or " + strings.Join(row.KeyVars[1:], ", or ") + ")"
		}
		return "", "", errors.New(msg)
	}
	baseURL = Env(lookup, row.BaseURLVars...)
	if baseURL == "" {
		baseURL = row.BaseURL
	}
	return key, strings.TrimRight(baseURL, "/"), nil
}
