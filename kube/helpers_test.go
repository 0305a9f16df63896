package kube

import (
	"encoding/json"
	"reflect"
)

func equal(a, b any) bool { return reflect.DeepEqual(a, b) }

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
