package api_test

import (
	"context"
	"fmt"
	"log"

	"github.com/podsup/podsup/api"
)

// A program that watches a running podsup needs this package alone.
func ExampleClient_Status() {
	c := api.NewClient("/run/podsup/podsup.sock")
	st, err := c.Status(context.Background(), "", "")
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range st.Groups {
		fmt.Printf("%s %s ready=%v\n", g.Name, g.Phase, g.Ready)
	}
}
