package src

// TODO: more greetings
