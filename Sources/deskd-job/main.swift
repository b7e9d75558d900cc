// Placeholder until deskd-job lands.
