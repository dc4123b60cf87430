package src

// Hello says hello. xx
func Hello() string { return "Hello" }
