package testtool

import "strconv"

// Items returns the records the framework tests' JSON routes answer with:
// 120 of them, about 5 KiB as JSON, long enough to compress, the last
// named "item 119". Each has an id, a name and the tags "squeeze" and tag.
func Items(tag string) []map[string]any {
	items := make([]map[string]any, 120)
	for i := range items {
		items[i] = map[string]any{"id": i, "name": "item " + strconv.Itoa(i), "tags": []string{"squeeze", tag}}
	}
	return items
}
