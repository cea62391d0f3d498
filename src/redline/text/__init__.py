"""Text helpers with no domain knowledge: words, sentences, literals, `{{var}}` templates."""
