// Package cart implements a shopping cart with pluggable pricing.
package cart

import (
	"errors"
	"fmt"
	str "strings"

	"example.com/shop/money"
)

// MaxItems is the most items a cart may hold.
const MaxItems = 100

var ErrFull = errors.New("cart is full")

// Pricer computes the price of an item.
type Pricer interface {
	Price(item Item) (money.Amount, error)
	fmt.Stringer
}

// Item is one line of a cart.
type Item struct {
	SKU      string `json:"sku"`
	Quantity int
	note     string
}

// Cart holds items and prices them with a Pricer.
type Cart struct {
	Item
	items  []Item
	pricer Pricer
}

type ID = string

// New returns an empty cart using pricer.
func New(pricer Pricer) *Cart {
	return &Cart{pricer: pricer}
}

// Add appends an item, refusing when the cart is full.
func (c *Cart) Add(item Item) error {
	if len(c.items) >= MaxItems {
		return ErrFull
	}
	item.SKU = str.ToUpper(item.SKU)
	c.items = append(c.items, item)
	return nil
}

// Total sums the price of every item.
func (c Cart) Total() (money.Amount, error) {
	var total money.Amount
	for _, it := range c.items {
		p, err := c.pricer.Price(it)
		if err != nil {
			return total, fmt.Errorf("pricing %s: %w", it.SKU, err)
		}
		total = total.Add(p)
	}
	return total, nil
}

func mapItems[T any](items []Item, f func(Item) T) []T {
	out := make([]T, 0, len(items))
	for _, it := range items {
		out = append(out, f(it))
	}
	return out
}
