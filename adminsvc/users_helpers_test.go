package adminsvc_test

import "strings"

// column is field of every item of a list answer, in order, joined by
// commas: "a@example.com,b@example.com".
func (r resp) column(field string) string {
	var s []string
	for _, it := range r.list() {
		v, _ := it[field].(string)
		s = append(s, v)
	}
	return strings.Join(s, ",")
}
