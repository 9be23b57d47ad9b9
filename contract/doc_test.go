package contract

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// contractsDoc is the user-facing reference of the contract keys.
const contractsDoc = "../docs/contracts.md"

// contractKeys lists every YAML key of a contract, dotted as
// docs/contracts.md writes them: nested mappings add ".name", a list of
// mappings adds "[]" (rules[].check); the keys of a field declaration are
// under fields.<name> (fields.<name>.type).
func contractKeys() []string {
	var keys []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if !f.IsExported() || tag == "" || tag == "-" {
				continue
			}
			key := prefix + tag
			keys = append(keys, key)
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft == reflect.TypeFor[Fields]():
				walk(key+".<name>.", reflect.TypeFor[Field]())
			case ft.Kind() == reflect.Struct && ft.PkgPath() == t.PkgPath():
				walk(key+".", ft)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(key+"[].", ft.Elem())
			}
		}
	}
	walk("", reflect.TypeFor[Contract]())
	return keys
}

// TestContractDocCoversEveryKey: docs/contracts.md has a "### `key`"
// heading for every key of the Contract structs.
func TestContractDocCoversEveryKey(t *testing.T) {
	page, err := os.ReadFile(contractsDoc)
	if err != nil {
		t.Fatal(err)
	}
	keys := contractKeys()
	if len(keys) < 30 {
		t.Fatalf("only %d keys found: %q", len(keys), keys)
	}
	for _, k := range keys {
		if !strings.Contains(string(page), "### `"+k+"`\n") {
			t.Errorf("%s: no heading ### `%s`", contractsDoc, k)
		}
	}
}
