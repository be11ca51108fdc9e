package demo

import "testing"

func TestFormatMoney(t *testing.T) {
	t.Parallel()
	for in, want := range map[Money]string{
		{"12.5", "EUR"}:  "12.50 EUR",
		{"12", "USD"}:    "12.00 USD",
		{"-0.05", "CHF"}: "-0.05 CHF",
		{"7.25", "JPY"}:  "7.25 JPY",
	} {
		got, err := formatMoney(in)
		if err != nil || got != want {
			t.Errorf("formatMoney(%v) = %q, %v; want %q", in, got, err, want)
		}
	}
}
