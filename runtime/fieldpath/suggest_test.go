package fieldpath

import "testing"

func TestAMisspeltWordIsClosestToTheNameMeant(t *testing.T) {
	names := []string{"children", "childResources", "image", "a"}
	tests := map[string]string{
		"chidren": "children", "imgae": "image", "IMAGE": "image", "b": "", "zzzzzz": "", "": "",
	}
	for word, want := range tests {
		if got := closest(word, names); got != want {
			t.Errorf("closest(%q) = %q, want %q", word, got, want)
		}
	}
}
