package main

import "net/url"

// urlWithUser returns raw with its user and password replaced.
func urlWithUser(raw, user, password string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	u.User = url.UserPassword(user, password)
	return u.String(), nil
}
