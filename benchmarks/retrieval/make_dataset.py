"""Generate PandaFS's own retrieval-evaluation set: conversations with planted facts.

    python benchmarks/retrieval/make_dataset.py --out DIR [--seed 7] [--users 8]
        [--sessions 25] [--turns 12]

writes ``DIR/conversations.jsonl`` (the `pandafs import-turns` format, one line per
turn), ``DIR/questions.jsonl`` (questions with the turns that answer them) and
``DIR/manifest.json`` (parameters and statistics).

Why synthetic: public long-memory sets (LoCoMo, LongMemEval) cannot ship with the
repo and do not match our import format; a seeded generator gives a set that is
byte-identical on every machine, has exact evidence labels, and can be scaled.

How it is built, per user: a persona (name, one of two conversation modes — talking
to the assistant or chatting with a friend) gets a set of *fact modules* (a pet, a
home that changes twice, jobs, friends met somewhere, preferences, dated events...).
Each module yields a chain of *episodes* (one to three consecutive turns) that are
placed in strictly later sessions, the questions the episodes answer, and
*distractors* (the same words in other people's lives: "my coworker adopted a
kitten too").  Sessions are then filled with small talk and filler on the
session's topic.  Questions never quote the evidence turn: they paraphrase
("relocate" for "moved", "cat" for "kitten"), and about a quarter need a
*neighbouring* turn of the same session to connect the question to the answer
(``needs_neighbour``; the neighbour is listed in ``support``).

Only the standard library is used, and only a seeded ``random.Random``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path

__all__ = ["KINDS", "generate", "main"]

KINDS = ("single_fact", "preference", "temporal", "multi_hop", "knowledge_update", "abstention")
PER_KIND = 7
"""Questions kept per kind and user (fewer when a small dataset cannot hold the facts)."""
NEIGHBOUR_SHARE = 0.5
"""How often a fact that can be split over two turns is split (its question then needs both)."""

# --------------------------------------------------------------------------- vocabulary

PERSONAS = [
    ("Maya", "f"), ("Daniel", "m"), ("Priya", "f"), ("Jonas", "m"), ("Chloe", "f"),
    ("Marco", "m"), ("Aisha", "f"), ("Lukas", "m"), ("Sofia", "f"), ("Ben", "m"),
    ("Hannah", "f"), ("Omar", "m"), ("Elena", "f"), ("Ravi", "m"), ("Nina", "f"),
    ("Felix", "m"), ("Grace", "f"), ("Mateo", "m"), ("Ingrid", "f"), ("Kwame", "m"),
]  # fmt: skip
FRIEND_SPEAKERS = ["Jess", "Sam", "Theo", "Lena", "Kai", "Ruth", "Nico", "Zoe", "Ollie", "Mira"]
WOMEN = [
    "Ana", "Clara", "Tessa", "Leila", "Joanna", "Marta", "Yuki", "Freya", "Beatriz", "Imani",
    "Rosa", "Dana", "Helena", "Noor", "Paula", "Greta", "Alice", "Mei", "Carla", "Sanne",
]  # fmt: skip
MEN = [
    "Tom", "Rafael", "Henrik", "Samir", "Luca", "Pieter", "Diego", "Arjun", "Callum", "Emil",
    "Jakob", "Tariq", "Bruno", "Oscar", "Viktor", "Malik", "Anton", "Ruben", "Iker", "Ewan",
]  # fmt: skip
CITIES = [
    "Lisbon", "Porto", "Rotterdam", "Utrecht", "Lyon", "Valencia", "Ghent", "Leipzig",
    "Krakow", "Bologna", "Edinburgh", "Bristol", "Gothenburg", "Tallinn", "Vienna", "Zurich",
    "Seville", "Marseille", "Dublin", "Copenhagen", "Antwerp", "Hamburg", "Turin", "Bilbao",
]  # fmt: skip
PET_NAMES = [
    "Biscuit", "Pepper", "Mochi", "Luna", "Olive", "Pickles", "Waffles", "Juniper", "Bruno",
    "Ziggy", "Nutmeg", "Clementine", "Bean", "Pixel", "Maple", "Otis", "Hazel", "Noodle",
    "Pesto", "Tofu", "Ginger", "Socks", "Willow", "Pretzel", "Figaro", "Kiwi", "Dumpling",
]  # fmt: skip
# species, the word the person uses, a fuller description, how a question names it
SPECIES = [
    ("dog", "puppy", ["scruffy terrier mix", "lanky greyhound", "beagle puppy", "rescue pup"]),
    ("dog", "puppy", ["golden retriever puppy", "wiry little mutt", "spaniel puppy"]),
    ("cat", "kitten", ["tiny grey kitten", "ginger tabby", "black kitten with white paws"]),
    ("cat", "kitten", ["fluffy tortoiseshell kitten", "skinny tabby kitten"]),
    ("rabbit", "bunny", ["lop-eared bunny", "little brown bunny"]),
]
SHELTERS = ["animal shelter", "rescue centre", "shelter on the edge of town", "adoption day"]
VETS = ["Dr. Alvarez", "Dr. Okafor", "Dr. Lindqvist", "Dr. Moretti", "Dr. Haddad", "Dr. Brennan"]
COMPANIES = [
    "Novatek", "Brightwell Labs", "Kestrel Systems", "Harbor & Finch", "Lumen Health",
    "Orbis Logistics", "Tidewater Bank", "Copperleaf Studio", "Quayside Media",
    "Fernhill Analytics", "Northgate Insurance", "Bluepine Software", "Atlas Freight",
    "Meridian Pharma", "Sablewood Games", "Greenway Energy",
]  # fmt: skip
ROLES = [
    "data analyst", "product designer", "backend engineer", "project manager",
    "UX researcher", "accountant", "marketing lead", "QA engineer", "copywriter",
    "sales engineer", "operations manager", "content strategist",
]  # fmt: skip
CARS = [
    "Toyota Yaris", "VW Golf", "Skoda Octavia", "Honda Jazz", "Ford Fiesta", "Kia Niro",
    "Renault Zoe", "Mazda 3", "Volvo V60", "Peugeot 208", "Hyundai Kona", "Fiat Panda",
]  # fmt: skip
PHONES = ["iPhone 12", "Pixel 8", "Samsung Galaxy S23", "OnePlus 11", "Fairphone 5", "iPhone 15"]
DIETS = [("vegetarian", "vegan"), ("pescatarian", "vegetarian"), ("vegan", "flexitarian")]
# name, what a session of it is, verb phrase
SPORTS = [
    ("running", "a 10k run before breakfast", "running"),
    ("swimming", "forty lengths at the pool", "swimming"),
    ("cycling", "a long ride along the river", "cycling"),
    ("yoga", "an hour of yoga", "yoga"),
    ("rowing", "half an hour on the rowing machine", "rowing"),
    ("pilates", "a pilates class", "pilates"),
    ("tennis", "two sets of tennis", "tennis"),
    ("boxing", "a boxing class", "boxing"),
]
# class, how the person says it, how a question says it, a progress remark without the name
CLASSES = [
    ("pottery", "pottery", "ceramics", "my bowls finally look like bowls and not ashtrays"),
    ("watercolour", "watercolour", "painting", "my skies stopped looking like bruises"),
    ("Spanish", "Spanish", "language", "I rolled my r's properly for the first time"),
    ("guitar", "guitar", "music", "my barre chords finally ring out"),
    ("woodworking", "woodworking", "carpentry", "my dovetail joints actually fit now"),
    ("life drawing", "life drawing", "sketching", "the hands I draw no longer look like bananas"),
    ("Japanese", "Japanese", "language", "I could read half the menu at the ramen bar"),
]
TEACHERS = ["Mr. Achterberg", "Señora Ruiz", "Keiko", "Mrs. Douglas", "Bram", "Ottilie", "Jules"]
# place, a paraphrase for questions, what people do there
PLACES = [
    ("climbing gym", "climbing wall", "was stuck on the same overhang as me"),
    ("book club", "reading club", "had the same strong opinions about the ending"),
    ("running club", "jogging club", "kept the same pace as me the whole way"),
    ("community choir", "local choir", "sings alto right next to me"),
    ("language exchange", "language meetup", "wants to practise English while I practise"),
    ("board-game café", "games café", "absolutely destroyed everyone at Catan"),
    ("chess club", "chess meetup", "beat me in eleven moves"),
    ("community garden", "community allotment", "shares the plot next to mine"),
    ("salsa class", "salsa lessons", "got paired with me for the whole evening"),
]
GIFTS = [
    "a pair of climbing shoes", "a signed first edition", "a fancy teapot", "a houseplant",
    "concert tickets", "a leather notebook", "a board game", "a cookbook", "a silk scarf",
    "a bottle of good olive oil", "a vinyl record", "a set of watercolour paints",
]  # fmt: skip
JOBS = [
    ("nurse", "nursing"), ("paramedic", "paramedic"), ("architect", "architecture"),
    ("primary school teacher", "teacher"), ("pilot", "flight"),
    ("vet", "veterinary"), ("lawyer", "legal"), ("pharmacist", "pharmacy"),
    ("electrician", "electrician"), ("physiotherapist", "physio"),
]  # fmt: skip
HOMETOWNS = [
    "Galway", "Bergen", "Cadiz", "Aarhus", "Salzburg", "Nantes", "Cork", "Graz", "Split",
    "Lucerne", "Ljubljana", "Malaga",
]  # fmt: skip
DESTINATIONS = [
    "Kyoto", "Reykjavik", "Marrakech", "Lima", "Hanoi", "Crete", "Cape Town", "Montreal",
    "Istanbul", "Oaxaca", "Tbilisi", "Bali", "Sicily", "Lapland",
]  # fmt: skip
BANDS = [
    "The Lanterns", "Marigold Parade", "Echo Harbour", "Velvet Static", "Paper Moons",
    "The Glass Orchard", "Northern Quiet", "Saint Juniper", "Low Tide Choir", "Blue Anchor",
]  # fmt: skip
INJURIES = [
    ("broke my wrist", "wrist", "fell off my bike"),
    ("sprained my ankle", "ankle", "missed the last step on the stairs"),
    ("twisted my knee", "knee", "landed badly at five-a-side"),
    ("cracked a rib", "rib", "slipped on the ice outside the bakery"),
    ("pulled a muscle in my back", "back", "lifted a box of books the wrong way"),
]
# category, how the person says it, how a question says it, models
PURCHASES = [
    ("camera", "mirrorless camera", "camera",
     ["Fujifilm X-T30", "Sony A6400", "Canon R50", "Nikon Z50", "OM System OM-5"]),
    ("headphones", "noise-cancelling headphones", "headphones",
     ["Sony WH-1000XM5", "Bose QC45", "Sennheiser Momentum 4", "AirPods Max"]),
    ("bike", "commuter", "bicycle",
     ["Brompton C Line", "Trek FX 3", "Cube Nature", "Canyon Roadlite"]),
    ("e-reader", "e-ink reader", "ebook reader",
     ["Kindle Paperwhite", "Kobo Clara", "PocketBook Era"]),
    ("espresso", "espresso machine", "coffee machine",
     ["Gaggia Classic", "Breville Bambino", "De'Longhi Dedica", "Lelit Anna"]),
    ("watch", "training watch", "smartwatch",
     ["Garmin Forerunner 265", "Apple Watch SE", "Coros Pace 3"]),
]  # fmt: skip
# what the person says, what a question says
PLAN_KINDS = [
    ("walking holiday", "hiking trip"), ("road trip", "driving holiday"),
    ("ski week", "skiing trip"), ("long weekend of wine tasting", "wine trip"),
    ("surf camp", "surfing holiday"),
]  # fmt: skip
PLAN_PLACES = [
    "the Dolomites", "the Scottish Highlands", "the Algarve", "the Pyrenees", "Tuscany",
    "the Black Forest", "Brittany", "the Lake District", "Madeira", "the Tatras",
]  # fmt: skip
MONTHS = ["January", "March", "April", "May", "June", "September", "October", "November"]
ALLERGENS = ["penicillin", "peanuts", "shellfish", "birch pollen", "latex", "kiwi", "sesame"]
RACE_TIMES = ["1:52", "1:47", "2:05", "1:58", "1:39", "2:11", "1:44"]

# --------------------------------------------------------------------------- filler

SLOTS = {
    "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
    "food": ["lasagne", "a curry", "shakshuka", "risotto", "dumplings", "a stir-fry", "tacos"],
    "show": ["that detective series", "the baking show", "a documentary about octopuses",
             "the new sci-fi series", "a Danish crime drama", "the cooking competition"],
    "chore": ["the laundry", "the dishes", "the bathroom", "my inbox", "the fridge"],
    "weather": ["grey and drizzly", "weirdly warm", "freezing", "windy", "gorgeous"],
    "num": ["two", "three", "four", "five", "six"],
    "thing": ["the charger", "my keys", "the umbrella", "my reading glasses", "the remote"],
    "app": ["the calendar app", "my notes app", "the banking app", "the weather app"],
    "colleague": WOMEN[:8] + MEN[:8],
    "city": CITIES,
    "dest": DESTINATIONS,
}  # fmt: skip

# (what the person says, what the assistant answers, what a friend answers)
FILLER: dict[str, list[tuple[str, str, str]]] = {
    "pets": [
        ("Is it normal for a pet to sleep eighteen hours a day?",
         "Quite normal, especially for young animals — lots of sleep is healthy.",
         "Honestly that's my dream schedule."),
        ("How often should you really trim claws? I always chicken out.",
         "Every few weeks; a little at a time with a treat afterwards works best.",
         "You're such a pushover, I love it."),
        ("The pet shop had a sale on food so I panic-bought {num} bags.",
         "Dry food keeps well if you store it sealed and somewhere cool.",
         "I'd have bought all of them too, no judgement."),
        ("What's a good way to keep fur off the sofa?",
         "A washable throw on the favourite spot and a lint roller go a long way.",
         "Just accept the fur. Fur is a lifestyle."),
        ("Do those puzzle feeders actually work or is it marketing?",
         "They do help with boredom and slow down fast eaters.",
         "Mine worked for two days, then it got outsmarted."),
        ("Someone on the street asked to take a photo of us, we're famous now.",
         "That's a lovely compliment on a walk!",
         "Famous! Should we get an agent?"),
        ("I spent way too long reading about pet insurance today.",
         "Comparing the excess and exclusions matters more than the monthly price.",
         "Insurance is the most boring rabbit hole."),
        ("Any ideas for keeping an animal busy on a rainy day?",
         "Short training games and a snuffle mat are great indoor options.",
         "Cardboard boxes. Always cardboard boxes."),
        ("There was a whole argument in the park group chat about leads today.",
         "Group chats do amplify small disagreements.",
         "The park group chat is the most dramatic place on the internet."),
        ("The animal shelter near work is doing a sponsored walk next month.",
         "That's a nice way to support them — maybe join in?",
         "Ooh we should sign up."),
        ("A random cat followed me halfway home tonight.",
         "Cats can be very curious about new people on their patch.",
         "You've been chosen. Accept your fate."),
        ("I watched a documentary about sheepdogs and now I want a farm.",
         "Sheepdog trials are fascinating to watch in person, too.",
         "Farm life! I'll visit, I won't work."),
    ],
    "home": [
        ("The boiler made a noise like a dying whale this morning.",
         "If it keeps happening, have an engineer check the pressure.",
         "A dying whale, I'm crying."),
        ("Do you think it's worth repainting the hallway myself?",
         "It's very doable — good prep and masking tape are most of the work.",
         "Do it, I'll come and hold the ladder."),
        ("I finally fixed the wobbly shelf, I feel like a real adult.",
         "Nice work — a small fix like that makes a home feel better.",
         "Look at you, handy person of the year."),
        ("The upstairs neighbours were moving furniture at midnight again.",
         "A friendly note might help; they may not realise how much it carries.",
         "Midnight furniture people are a special kind of evil."),
        ("How do I get rid of mould on the bathroom ceiling?",
         "A diluted vinegar solution and better ventilation usually help.",
         "Open a window and pray, that's my method."),
        ("The internet keeps dropping every evening around eight.",
         "Restarting the router and checking for interference is a good first step.",
         "Eight pm is when the whole street starts streaming."),
        ("I need a better system for {chore}, it's out of control.",
         "Small daily routines tend to beat one big weekly push.",
         "Or ignore it until it goes away, works for me."),
        ("Found {thing} behind the radiator after three weeks of searching.",
         "A small tray by the door can give things a home.",
         "Three weeks! Classic."),
        ("Thinking about getting a rug for the living room, it echoes.",
         "A rug with a felt underlay will cut the echo noticeably.",
         "Honestly a rug changes everything, do it."),
        ("The landlord still hasn't answered about the leaking tap.",
         "Putting the request in writing with a date usually speeds things up.",
         "Landlords are allergic to emails, it's a known condition."),
        ("We finally hung the pictures that have been leaning on the wall for a year.",
         "That will make the place feel much more like home.",
         "A year! A new record."),
        ("The smoke alarm beeps every time I make toast.",
         "Moving it a little further from the kitchen can help.",
         "Your smoke alarm is a food critic."),
        ("Our street is getting new bike lanes, it's all roadworks right now.",
         "Short-term disruption, but bike lanes are usually worth it.",
         "Roadworks forever, bikes someday."),
    ],
    "work": [
        ("I had {num} meetings back to back today and achieved nothing.",
         "Batching meetings on fewer days can protect the rest of the week.",
         "Meetings are a scam, I'm convinced."),
        ("My manager wants a slide deck by {weekday}, send help.",
         "Start with three key messages, then build slides around them.",
         "You'll smash the deck, you always do."),
        ("How do I politely decline a meeting that could have been an email?",
         "You could ask for the agenda and offer to send notes instead.",
         "Just say your calendar exploded."),
        ("{colleague} brought cake to the office, the day is saved.",
         "Office cake is a reliable morale boost.",
         "Cake fixes everything, that's science."),
        ("The printer jammed during the one important print of the month.",
         "Printing to PDF first and keeping a backup copy can save the day.",
         "Printers can smell fear."),
        ("I keep forgetting to update my timesheet and then panic on Fridays.",
         "A short reminder at the end of each day makes timesheets painless.",
         "Timesheets are fiction anyway."),
        ("Is it weird to block focus time in my calendar?",
         "Not at all — it's increasingly common and usually respected.",
         "Block it! Protect your brain."),
        ("We have a team offsite next month and I'm already tired.",
         "Planning some quiet time around it might help you recharge.",
         "Offsites are just meetings with worse coffee."),
        ("The quarterly review went fine, I think? Hard to tell.",
         "Fine is good! You could ask for one concrete piece of feedback.",
         "No news is good news."),
        ("Can you help me word an out-of-office message?",
         "Something like: 'I'm away until Monday with limited access to email.'",
         "'Gone fishing. Do not disturb.' Done."),
        ("{colleague} is leaving the team and the farewell card is going round.",
         "A short personal memory makes a card message stand out.",
         "Write something embarrassing, it's tradition."),
        ("The office heating is broken so we're all in coats.",
         "Fingerless gloves and a hot drink — and report it again.",
         "Office camping! Bring marshmallows."),
        ("I've got a performance review on {weekday} and I'm weirdly nervous.",
         "Writing down three wins beforehand can make it feel easier.",
         "You're great at your job, you'll be fine."),
    ],
    "hobbies": [
        ("I started a jigsaw puzzle and now I can't use the dining table.",
         "A puzzle board you can slide away might save your dinners.",
         "Jigsaw at the dinner table is a lifestyle."),
        ("Do you know any good beginner knitting patterns?",
         "A simple garter-stitch scarf is a classic first project.",
         "Knit me a hat, I'll wear it ironically."),
        ("I've been trying to get into birdwatching, saw a heron today.",
         "Herons are a great first spot — early mornings near water are best.",
         "A heron! Majestic dinosaur birds."),
        ("Spent the whole afternoon reorganising my bookshelf by colour.",
         "Colour order looks lovely, though finding a title can be a puzzle.",
         "Colour-coded shelves, the influencers would be proud."),
        ("Thinking of trying a photography walk this weekend.",
         "It's a great way to notice your neighbourhood differently.",
         "Take photos of pigeons, they're underrated models."),
        ("My sourdough starter died again, third one this year.",
         "Starters are forgiving — feed it more regularly and keep it warm.",
         "RIP starter number three."),
        ("I want a hobby that doesn't involve a screen, any ideas?",
         "Sketching, gardening or learning an instrument all keep you off screens.",
         "Competitive napping."),
        ("Went to a flea market and came back with a weird lamp.",
         "Flea markets are full of treasures with character.",
         "The weird lamp is the best purchase you'll make this year."),
        ("I've been doing the crossword every morning, it's addictive.",
         "Crosswords are a lovely morning ritual and good for the brain.",
         "You're becoming a grandpa and I respect it."),
        ("I tried origami from a video and made something that might be a swan.",
         "The swan is a classic — it gets easier with each fold.",
         "It's a swan if you believe."),
        ("Spent the evening repotting all the houseplants.",
         "Spring is the ideal time to repot most plants.",
         "Plant parent of the year."),
        ("I keep buying notebooks and never finishing them.",
         "Using one notebook for everything can break the cycle.",
         "Notebook hoarding is a recognised hobby."),
    ],
    "social": [
        ("We had people over on Saturday and I'm still finding crumbs.",
         "Sounds like a good party, if the crumbs are anything to go by.",
         "Crumbs are proof of a good time."),
        ("How do you keep in touch with friends who live far away?",
         "Regular short calls often work better than rare long ones.",
         "Voice notes, so many voice notes."),
        ("My cousin's wedding invitation arrived, it's on a boat.",
         "A boat wedding sounds memorable — pack something warm.",
         "A boat wedding! Bring seasickness tablets."),
        ("I forgot a birthday again, I'm a terrible human.",
         "A heartfelt late message is much better than none at all.",
         "You're not terrible, you're busy. Send a voice note."),
        ("The group chat has been planning a dinner for three weeks, no date yet.",
         "Proposing two concrete dates usually unblocks a group chat.",
         "Group chats are where plans go to die."),
        ("Is it rude to leave a party after an hour?",
         "Not at all — a warm goodbye to the host is what matters.",
         "Leaving after an hour is self-care."),
        ("{colleague} asked me to be a reference, which is sweet.",
         "Being asked to be a reference is a real sign of trust.",
         "Aww, you're officially a grown-up."),
        ("Went to a quiz night, we came second to last.",
         "Quiz nights are more about the company than the score.",
         "Second to last is basically winning."),
        ("I think I need a quiet weekend with absolutely no plans.",
         "A quiet weekend can be exactly what you need to recharge.",
         "Quiet weekends are underrated."),
        ("An old school friend messaged me out of nowhere today.",
         "That's a nice surprise — are you going to catch up?",
         "Ooh, who? I need the gossip."),
        ("We played charades at the family dinner and it got competitive.",
         "Charades brings out everyone's hidden drama skills.",
         "Charades is a contact sport in my family too."),
        ("I'm terrible at replying to messages, I owe everyone an answer.",
         "Setting aside ten minutes a day for replies can clear the backlog.",
         "You owe me three answers, for the record."),
    ],
    "food": [
        ("What should I make with half a cabbage and some eggs?",
         "A cabbage fried rice or an okonomiyaki-style pancake would be perfect.",
         "Cabbage omelette, trust me."),
        ("I made {food} last night and it was honestly great.",
         "Nice! Cooking something new that works out is so satisfying.",
         "You have to teach me that recipe."),
        ("How long does cooked rice keep in the fridge?",
         "Cooked rice is best eaten within a day, kept chilled.",
         "I have no idea, I live dangerously."),
        ("The new bakery on the corner does a cardamom bun that's unreal.",
         "Cardamom buns are a wonderful find — early visits get them warm.",
         "Save me one of those buns, I'm serious."),
        ("I'm trying to cook more at home and eat out less.",
         "Planning two or three home meals a week is a realistic start.",
         "Okay chef, I see you."),
        ("Any tips for meal prep that doesn't get boring by Wednesday?",
         "Prepping components rather than full meals keeps things varied.",
         "Hot sauce. Different hot sauce every day."),
        ("I burnt the garlic again, the whole flat smells of it.",
         "Adding garlic later, over lower heat, helps it not burn.",
         "Garlic perfume is a valid choice."),
        ("We ordered way too much takeaway on {weekday}.",
         "Leftovers can make a very easy lunch the next day.",
         "Too much takeaway means leftovers, that's a win."),
        ("Is it worth buying a proper chef's knife?",
         "A good knife makes cooking faster and safer — it's a worthwhile buy.",
         "Yes, and then never let anyone touch it."),
        ("I tried making pasta from scratch and the kitchen looks like a snowstorm.",
         "Fresh pasta is messy but so rewarding — it gets quicker with practice.",
         "Flour everywhere is the sign of real effort."),
        ("The farmers' market had the best tomatoes I've had all year.",
         "In-season tomatoes need nothing more than salt and olive oil.",
         "Tomato season is the best season."),
        ("What's a quick lunch I can take to work?",
         "A grain salad with beans and roasted vegetables travels well.",
         "Crisps and optimism."),
    ],
    "tech": [
        ("My laptop fan has been screaming all day for no reason.",
         "Check which process is using the CPU; a stuck update is a common culprit.",
         "Your laptop is trying to take off."),
        ("How do I move my photos off my phone without losing them?",
         "Copying them to a computer plus a second backup is the safest route.",
         "Cloud and pray, that's my system."),
        ("The update broke {app} again.",
         "Clearing its cache or reinstalling usually fixes post-update issues.",
         "Ugh, update roulette."),
        ("Is a password manager really safer than a notebook?",
         "With a strong master password, a password manager is much safer overall.",
         "My notebook has never been hacked, just saying."),
        ("I think my email got hacked, I'm getting weird bounce-backs.",
         "Change your password now and turn on two-factor authentication.",
         "Oh no, change your password right now!"),
        ("What's the easiest way to back up everything once a week?",
         "An external drive with a scheduled backup job is simple and reliable.",
         "Backups are for people with their life together."),
        ("Our smart speaker keeps answering when nobody talked to it.",
         "Changing the wake word can reduce false activations.",
         "The smart speaker is listening, I told you."),
        ("I spent an hour fighting with the printer drivers.",
         "Downloading drivers from the manufacturer's site often avoids trouble.",
         "Printer drivers are from the devil."),
        ("Is it worth paying for more cloud storage?",
         "If your photos are the main thing, a modest plan is good value.",
         "Cloud storage is the new rent."),
        ("The wifi in the bedroom is basically nonexistent.",
         "A mesh node or powerline adapter usually fixes dead zones.",
         "Bedroom is a no-internet zone, it's healthy."),
        ("I accidentally deleted a whole folder at work today.",
         "Check the recycle bin or the server's version history first.",
         "Heart attack moment. Did you get it back?"),
        ("My screen has a dead pixel right in the middle, it's all I see now.",
         "Some monitors are covered by a dead-pixel warranty — worth checking.",
         "You can never unsee it now."),
    ],
    "fitness": [
        ("My legs are dead after yesterday, stairs are a challenge.",
         "Gentle movement and stretching help sore muscles recover.",
         "Stairs are the enemy, I feel you."),
        ("How many rest days should I actually take?",
         "One or two rest days a week is a sensible baseline for most people.",
         "Rest days every day, that's my plan."),
        ("I keep skipping stretching and my back is filing complaints.",
         "Five minutes of stretching after exercise makes a real difference.",
         "Stretch! Your back is begging."),
        ("Is it better to work out in the morning or evening?",
         "The best time is the one you can stick to consistently.",
         "Whenever you won't cancel on yourself."),
        ("Bought a foam roller, it is a torture device.",
         "Foam rolling gets easier; go gently at first.",
         "The foam roller is pain you pay for."),
        ("Walked {num} kilometres today just running errands.",
         "That's great everyday activity — it all adds up.",
         "Errand cardio counts."),
        ("I want to get stronger but gyms intimidate me.",
         "A beginner class or one session with a trainer can take the edge off.",
         "Gyms are scary but nobody is watching, promise."),
        ("Any ideas for a ten-minute workout at home?",
         "Bodyweight circuits — squats, push-ups, lunges — fit in ten minutes.",
         "Ten minutes of dancing in the kitchen."),
        ("The gym was packed tonight, everyone's doing new year resolutions.",
         "It usually quietens down after a few weeks.",
         "Resolution crowd, give it till February."),
        ("I got a cramp in my calf in the middle of the night.",
         "Hydration and a gentle calf stretch before bed can help prevent that.",
         "Night cramps are the worst, ugh."),
        ("Tried a spin class and nearly passed out.",
         "Spin is intense — starting at a lower resistance is completely fine.",
         "Spin instructors are unhinged."),
    ],
    "travel": [
        ("Do you have tips for packing light for a week?",
         "Rolling clothes and planning outfits around two colours helps a lot.",
         "Wear everything at once, problem solved."),
        ("Flight prices are absurd right now.",
         "Booking mid-week and being flexible on dates can bring prices down.",
         "Flights cost a kidney now."),
        ("{colleague} just got back from {dest} and won't stop talking about it.",
         "It sounds like it made quite an impression!",
         "Everyone who goes to {dest} comes back changed."),
        ("I always forget adapters, I must own eight by now.",
         "An adapter line on your packing list might break the cycle.",
         "Adapter collector, it's a hobby now."),
        ("Is travel insurance worth it for short trips?",
         "Even for short trips, basic cover is often worth it for cancellations.",
         "I never get it and I live in fear."),
        ("Trains or flights for shorter distances?",
         "Trains are usually less stressful under about five hours door to door.",
         "Trains, always, you can nap."),
        ("A friend of a friend is selling their camper van, tempting.",
         "Worth checking the mileage and service history before you decide.",
         "A camper van! Do it, I'll be your co-pilot."),
        ("I want to go somewhere warm in winter but the budget says no.",
         "Shoulder-season trips to the south can be warm and affordable.",
         "Warm winter trips are a human right."),
        ("My passport expires next year, I should renew it.",
         "Renewing early avoids stress — some countries need six months' validity.",
         "Do it now before you forget, I know you."),
        ("The airport security line took an hour this morning.",
         "Early-morning flights often have the longest queues — allow extra time.",
         "Airports are a test of patience."),
        ("I love looking at maps of places I'll never go.",
         "Map browsing is a lovely way to daydream about trips.",
         "Armchair travel is the cheapest kind."),
    ],
    "entertainment": [
        ("We finished {show} last night, the ending was strange.",
         "Ambiguous endings split people — what did you make of it?",
         "The ending was SO weird, I need to talk about it."),
        ("Can you recommend a film for a rainy Sunday?",
         "A cosy classic like a heist comedy is a safe rainy-day pick.",
         "Anything with a dog in it."),
        ("I fell asleep halfway through the movie again.",
         "Maybe an earlier start or a shorter film next time!",
         "Falling asleep in films is your signature move."),
        ("Is that new fantasy series worth starting?",
         "It starts slowly but reviewers say it pays off by the third episode.",
         "Only if you have forty hours to lose."),
        ("I've rewatched the same comfort show four times this year.",
         "Comfort rewatches are great — familiar stories are restful.",
         "Comfort shows are medicine."),
        ("We tried a podcast on the drive and it was actually good.",
         "Podcasts make long drives fly by.",
         "Send me the podcast!"),
        ("The cinema near us does cheap tickets on {weekday}.",
         "Cheap-ticket nights are a great excuse to see more films.",
         "Cheap ticket night is the best night."),
        ("I can't decide what to watch, I've been scrolling for twenty minutes.",
         "Picking from a shortlist of three ends the scrolling quickly.",
         "Scrolling for twenty minutes is the real show."),
        ("There's a new season of the baking show and I'm emotionally ready.",
         "The baking show is a reliably relaxing watch.",
         "Soggy bottoms incoming."),
        ("Played a board game so long we had to stop at midnight.",
         "Long strategy games can be worth leaving set up overnight.",
         "Board games that never end are the best and worst."),
        ("I went to a stand-up show and got picked on by the comedian.",
         "Front-row seats are always a risk at comedy shows!",
         "Never sit in the front row, rule one."),
    ],
    "shopping": [
        ("Is it better to buy refurbished or wait for a sale?",
         "Refurbished from a reputable seller with a warranty is often great value.",
         "Refurbished, always, save the money for snacks."),
        ("I returned {num} things this month, I'm a menace.",
         "Checking measurements before ordering can cut returns a lot.",
         "Menace behaviour, I love it."),
        ("The supermarket moved everything around again.",
         "Supermarkets rearrange things to make us browse more — it works!",
         "The supermarket reshuffle is psychological warfare."),
        ("How do I stop impulse buying at midnight?",
         "A 24-hour rule before checkout cuts impulse purchases a lot.",
         "Midnight shopping is a sickness."),
        ("Found a great second-hand shop near the station.",
         "Second-hand shops are great for quality basics at lower prices.",
         "Take me to the second-hand shop!"),
        ("I need new winter boots but everything is ugly.",
         "Practical boots with a good sole are worth a small style sacrifice.",
         "Ugly boots are back in fashion, probably."),
        ("Do extended warranties ever make sense?",
         "Rarely, unless the item is fragile and expensive.",
         "Never. They're a trap."),
        ("I spent twenty minutes choosing a toothbrush today.",
         "Soft bristles and a comfortable handle are what matter most.",
         "Twenty minutes for a toothbrush is very you."),
        ("The parcel I was waiting for got delivered to the wrong house.",
         "Contacting the courier quickly usually gets it sorted.",
         "Go knock on doors, it's an adventure."),
        ("Bought a lamp online and it's the size of a thimble.",
         "Always worth double-checking dimensions in listings!",
         "A tiny lamp! Keep it, it's cute."),
        ("Should I get a fancy water bottle or is that silly?",
         "A good insulated bottle is a practical everyday buy.",
         "Everyone's personality is their water bottle now."),
    ],
    "health": [
        ("I've been sleeping badly all week.",
         "A regular wake-up time and less screen light in the evening can help.",
         "Sleep is a myth for us."),
        ("How much water should I actually be drinking?",
         "Roughly two litres a day is a common guideline, more if you're active.",
         "Drink some water right now, I'm watching."),
        ("My dentist appointment got moved to {weekday} again.",
         "Annoying! It might help to ask for the first slot of the day.",
         "Dentists reschedule like it's a sport."),
        ("I keep getting headaches in the afternoon.",
         "Afternoon headaches are often about hydration or screen breaks.",
         "Same, I blame the screens."),
        ("Is it bad that I skip breakfast most days?",
         "It's fine for many people if you eat well later in the day.",
         "Coffee is breakfast, right?"),
        ("I finally booked the eye test I've been avoiding.",
         "Good for you — regular eye tests matter, especially with screen work.",
         "Proud of you for booking the eye test."),
        ("I think I'm coming down with a cold.",
         "Rest, fluids and an early night are the classic plan.",
         "Soup and blankets, stat."),
        ("Any tips for winding down before bed?",
         "A short reading routine without screens can signal bedtime.",
         "Bedtime routine? I barely know her."),
        ("Had my flu jab today, arm is a bit sore.",
         "A sore arm is normal for a day or two — moving it gently helps.",
         "Brave! Have a biscuit."),
        ("I've been trying to meditate but my mind won't shut up.",
         "That's normal — noticing the wandering is part of the practice.",
         "My mind is a radio that never turns off too."),
        ("The pharmacy was out of the thing I needed, again.",
         "Calling ahead to check stock can save a trip.",
         "Pharmacies are a treasure hunt now."),
    ],
    "weekend": [
        ("The weather here is {weather} today.",
         "Sounds like a good day for something cosy indoors, or a brisk walk.",
         "Weather here is just as dramatic."),
        ("Any ideas for a cheap day out this weekend?",
         "A local museum on a free-entry day or a long walk are lovely options.",
         "Picnic in the park, bring the good cheese."),
        ("I slept until ten and I regret nothing.",
         "Sounds like you needed it.",
         "Ten o'clock lie-ins are the dream."),
        ("We walked along the river and got caught in a shower.",
         "Rain showers make for good stories later.",
         "Classic. Were you soaked?"),
        ("I cleaned {chore} and now I deserve a medal.",
         "A well-earned medal — cleaning counts as exercise!",
         "Medal awarded. Gold."),
        ("There's a street market on Sunday, should we go?",
         "Street markets are great for a slow Sunday — go early for the best stalls.",
         "Market on Sunday, yes, I'm in."),
        ("Lazy day today, just tea and a book.",
         "That sounds like a properly restful day.",
         "Tea and a book is elite behaviour."),
        ("I think I'll try the new brunch place tomorrow.",
         "Brunch spots are busiest around eleven, so earlier is calmer.",
         "Report back on the brunch!"),
        ("Spent the afternoon at a car boot sale, bought nothing useful.",
         "The fun is in the browsing, not the buying.",
         "Nothing useful is the point."),
        ("Sunday reset: laundry, groceries, one episode of something.",
         "A gentle reset routine sets the week up nicely.",
         "The holy Sunday reset."),
        ("Went to the lake with a thermos and watched the ducks for an hour.",
         "That sounds wonderfully calm.",
         "Duck watching is underrated therapy."),
    ],
}  # fmt: skip

OPENERS = {
    "assistant": [
        ("Morning! Quick one before work.", "Good morning! What can I help with?"),
        ("Hi, got a minute?", "Of course — what's on your mind?"),
        ("Evening. Long day.", "Sorry to hear that. Want to talk it through?"),
        ("Hey, back again.", "Welcome back! What's up today?"),
        ("Hello! Random question time.", "Go for it, I'm here."),
        ("Ok I need to think out loud for a bit.", "Happy to listen — go ahead."),
        ("Hi there. Coffee in hand, let's go.", "Ready when you are."),
    ],
    "friend": [
        ("Heyyy, you around?", "Always! What's new with you, {P}?"),
        ("Hi! Sorry I went quiet this week.", "No worries, {P}, life happens. Catch me up!"),
        ("Okay I have updates.", "Ooh, spill, {P}."),
        ("Morning! How's your week going?", "Chaotic but fine. Yours?"),
        ("Are you free to chat?", "For you, always. What's up?"),
        ("Guess who finally has a quiet evening.", "Finally! Tell me everything."),
        ("Hey {F}, quick catch-up?", "Yes please, I've missed you, {P}."),
    ],
}
CLOSERS = {
    "assistant": [
        ("Okay, that's all for now. Thanks!", "You're welcome — talk soon."),
        ("Right, I should get some sleep.", "Good idea. Good night!"),
        ("Thanks, that helped.", "Glad to hear it. Anytime."),
        ("I'll let you know how it goes.", "Please do — good luck!"),
    ],
    "friend": [
        ("Okay I have to run, love you!", "Love you too, talk soon!"),
        ("I should sleep, chat tomorrow?", "Yes! Night night."),
        ("Thanks for listening, seriously.", "Always. That's what I'm here for."),
        ("Let's get coffee next week?", "Deal, I'll text you a day."),
    ],
}

GOOD_NEWS = {
    "assistant": [
        "Congratulations! That's a big step.",
        "That's wonderful news — well done.",
        "How exciting! I hope it all goes smoothly from here.",
        "That's lovely to hear. How are you feeling about it?",
    ],
    "friend": [
        "No way!! Congrats!",
        "Ahh that's amazing, we have to celebrate.",
        "Finally! Drinks on me next time.",
        "I'm so happy for you, honestly.",
    ],
}
ACK = {
    "assistant": [
        "Good to know — I'll keep that in mind.",
        "Thanks for telling me, that helps me tailor suggestions.",
        "Noted! That's useful context.",
        "That makes sense. I'll remember that.",
    ],
    "friend": ["Ha, that's so you.", "Fair enough!", "Honestly same.", "Makes total sense."],
}
SYMPATHY = {
    "assistant": [
        "Oh no, I'm sorry. I hope it heals quickly.",
        "That sounds painful — please take it easy for a while.",
        "Ouch. Make sure you rest properly.",
    ],
    "friend": ["Nooo, you poor thing!", "Ouch!! Do you need anything?", "That's awful, rest up."],
}

# --------------------------------------------------------------------------- model


@dataclass
class Turn:
    query: str
    response: str
    key: str | None = None


@dataclass
class Episode:
    topic: str
    turns: list[Turn]


@dataclass
class QSpec:
    kind: str
    text: str
    evidence: list[str]
    answer: str | None = None
    neighbour: bool = False
    support: list[str] = field(default_factory=list)
    date_of: tuple[str, str] | None = None  # (turn key, relative phrase) → answer is a date


@dataclass
class Plan:
    """One fact module for one user: episodes to place in strictly later sessions."""

    name: str
    chain: list[Episode]
    questions: list[QSpec]
    distractors: list[Turn] = field(default_factory=list)


@dataclass
class Person:
    name: str
    she: str
    her: str
    him: str

    @classmethod
    def of(cls, name: str, gender: str) -> Person:
        if gender == "f":
            return cls(name, "she", "her", "her")
        return cls(name, "he", "his", "him")


@dataclass
class Ctx:
    """Everything a module needs to write one user's facts."""

    uid: str
    me: Person
    mode: str
    speaker: str
    rng: random.Random
    facts: dict[str, str] = field(default_factory=dict)

    @property
    def P(self) -> str:
        return self.me.name

    @property
    def Ps(self) -> str:
        return f"{self.me.name}'s"

    def pick(self, seq):
        return self.rng.choice(seq)

    def reply(self, assistant: list[str], friend: list[str]) -> str:
        return self.rng.choice(assistant if self.mode == "assistant" else friend)

    def other(self, seq, *exclude):
        return self.rng.choice([x for x in seq if x not in exclude])

    def person(self, *exclude: str) -> Person:
        gender = self.rng.choice("fm")
        names = [n for n in (WOMEN if gender == "f" else MEN) if n not in exclude]
        return Person.of(self.rng.choice(names), gender)


WHEN = [("today", 0), ("this morning", 0), ("yesterday", 1), ("last weekend", -1)]


def resolve_when(day: date, phrase: str) -> date:
    offset = dict(WHEN)[phrase]
    if offset >= 0:
        return day - timedelta(days=offset)
    return day - timedelta(days=day.weekday() + 2)  # the Saturday of the previous weekend


def an(word: str) -> str:
    return f"an {word}" if word[:1].lower() in "aeiou" else f"a {word}"


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# --------------------------------------------------------------------------- fact modules
# Each returns a Plan.  Keys are "<module>:<label>" and unique per user.


def m_pet(c: Ctx) -> Plan:
    species, young, looks = c.pick(SPECIES)
    name = c.pick(PET_NAMES)
    c.facts["species"] = species
    c.facts["pet"] = name
    pet = Person.of(name, c.pick("fm"))
    look = c.pick(looks)
    when = c.pick([w for w, _ in WHEN])
    vet = c.pick(VETS)
    qs: list[QSpec] = []
    if c.rng.random() < NEIGHBOUR_SHARE:
        t1 = Turn(
            f"We went to the {c.pick(SHELTERS)} {when} 'just to look' and of course ended up "
            f"adopting a {look}.",
            c.reply(
                ["That was always going to happen! What are you going to call the new arrival?"],
                ["You were doomed the second you walked in. What's the name??"],
            ),
            "pet:adopt",
        )
        t2 = Turn(
            f"Three days of arguing and we finally agreed on a name: {name}. {cap(pet.she)} "
            "already owns the sofa.",
            c.reply([f"{name} is a lovely choice."], [f"{name}!! Perfect. I need to meet {pet.him}."]),
            "pet:name",
        )
        episode = Episode("pets", [t1, t2])
        qs.append(
            QSpec(
                "single_fact",
                c.pick(
                    [
                        f"What name did {c.P} give the {species} {c.me.she} adopted?",
                        f"What is {c.Ps} {species} called?",
                    ]
                ),
                ["pet:name"],
                name,
                neighbour=True,
                support=["pet:adopt"],
            )
        )
        qs.append(
            QSpec(
                "temporal",
                f"When did {name} join {c.Ps} household?",
                ["pet:adopt"],
                neighbour=True,
                support=["pet:name"],
                date_of=("pet:adopt", when),
            )
        )
        name_neighbour = True
    else:
        t = Turn(
            f"Big news: we adopted a {look} from the {c.pick(SHELTERS)} {when}. "
            f"{cap(pet.her)} name is {name} and {pet.she} has already chewed a shoe.",
            c.reply(
                [f"Congratulations on adopting {name}! The first weeks are all about routine."],
                [f"STOP. {name}?! I'm coming over this weekend."],
            ),
            "pet:name",
        )
        episode = Episode("pets", [t])
        qs.append(
            QSpec(
                "single_fact",
                c.pick([f"What is {c.Ps} {species} called?", f"What's the name of {c.Ps} pet?"]),
                ["pet:name"],
                name,
            )
        )
        qs.append(
            QSpec(
                "temporal",
                c.pick(
                    [
                        f"When did {c.P} bring {name} home?",
                        f"On what date did {name} become part of {c.Ps} family?",
                    ]
                ),
                ["pet:name"],
                date_of=("pet:name", when),
            )
        )
        name_neighbour = False
    vet_turn = Turn(
        f"Took {name} to the vet this morning for {pet.her} jabs. {vet} said {pet.she}'s "
        "perfectly healthy, just a bit dramatic.",
        c.reply(["Glad to hear everything checked out fine."], ["Dramatic, like the owner."]),
        "pet:vet",
    )
    qs.append(
        QSpec(
            "multi_hop",
            c.pick(
                [
                    f"Which vet looks after {c.Ps} {species}?",
                    f"Who is the veterinarian treating {c.Ps} {species}?",
                ]
            ),
            ["pet:name", "pet:vet"],
            vet,
            neighbour=name_neighbour,
            support=["pet:adopt"] if name_neighbour else [],
        )
    )
    other_species, other_young, _ = c.pick(SPECIES)
    other_name = c.other(PET_NAMES, name)
    coworker = c.person()
    distractors = [
        Turn(
            f"{coworker.name} at work adopted a {other_young} too, named it {other_name}, and now "
            "every meeting starts with photos.",
            c.reply(["That's a nice way to start a meeting, honestly."], ["Honestly better meetings."]),
        ),
        Turn(
            f"The neighbours' {other_species} got into our garden again and sat on the car roof.",
            c.reply(["Maybe a quick chat with the neighbours would help."], ["Bold animal. Respect."]),
        ),
    ]
    return Plan("pet", [episode, Episode("pets", [vet_turn])], qs, distractors)


def m_home(c: Ctx) -> Plan:
    c1, c2, c3 = c.rng.sample(CITIES, 3)
    c.facts["cities"] = ",".join((c1, c2, c3))
    t0 = Turn(
        f"I've lived in {c1} for six years and the rent has gone up every single one of them.",
        c.reply(["Rent increases like that are exhausting. Have you looked at options?"],
                ["Housing is a scam, I'm sorry."]),
        "home:first",
    )  # fmt: skip
    when = c.pick([w for w, _ in WHEN])
    qs = [
        QSpec(
            "single_fact",
            c.pick(
                [
                    f"Which city did {c.P} live in before {c2}?",
                    f"Where was {c.P} living before relocating to {c2}?",
                ]
            ),
            ["home:first"],
            c1,
        )
    ]
    if c.rng.random() < NEIGHBOUR_SHARE:
        move = [
            Turn(
                f"The movers turned up two hours late {when}, but every box is finally in the new flat.",
                c.pick(GOOD_NEWS[c.mode]),
                "home:move2",
            ),
            Turn(
                f"{c2} is so much quieter than {c1}, I can hear birds in the morning.",
                c.reply(["That sounds like a wonderful change of pace."], ["Birds! Fancy."]),
                "home:city2",
            ),
        ]
        qs.append(
            QSpec(
                "temporal",
                f"When did {c.P} relocate to {c2}?",
                ["home:move2"],
                neighbour=True,
                support=["home:city2"],
                date_of=("home:move2", when),
            )
        )
    else:
        move = [
            Turn(
                f"We finally moved to {c2} {when}! Boxes everywhere but the view is worth it.",
                c.pick(GOOD_NEWS[c.mode]),
                "home:move2",
            )
        ]
        qs.append(
            QSpec(
                "temporal",
                c.pick(
                    [
                        f"When did {c.P} relocate to {c2}?",
                        f"On which date did {c.P} settle in {c2}?",
                    ]
                ),
                ["home:move2"],
                date_of=("home:move2", when),
            )
        )
    if c.rng.random() < NEIGHBOUR_SHARE:
        again = [
            Turn(
                f"Signed the lease on a new place today, so the {c2} chapter is officially over.",
                c.reply(["Another move! How are you feeling?"], ["AGAIN? You nomad."]),
                "home:lease3",
            ),
            Turn(
                f"Living in {c3} means a bakery on every corner, I'm doomed.",
                c.reply(["Bakeries on every corner sounds dangerous in the best way."],
                        ["Send pastries by post please."]),
                "home:city3",
            ),
        ]  # fmt: skip
        ku = QSpec(
            "knowledge_update",
            c.pick([f"Which city does {c.P} live in at the moment?", f"Where is {c.P} based now?"]),
            ["home:city3"],
            c3,
            neighbour=True,
            support=["home:lease3"],
        )
    else:
        again = [
            Turn(
                f"Plot twist: we packed up again. The job transfer came through and as of this "
                f"week we live in {c3}.",
                c.reply(["That's a lot of change in one year — congratulations on the transfer."],
                        ["You've moved more than my houseplants."]),
                "home:city3",
            )
        ]  # fmt: skip
        ku = QSpec(
            "knowledge_update",
            c.pick(
                [
                    f"Which city does {c.P} currently call home?",
                    f"In which city is {c.P} living these days?",
                ]
            ),
            ["home:city3"],
            c3,
        )
    qs.append(ku)
    who = c.person()
    distractors = [
        Turn(
            f"My cousin just moved to {c.other(CITIES, c1, c2, c3)} and keeps sending me flat photos.",
            c.reply(["Exciting for them!"], ["Everyone is moving except me."]),
        ),
        Turn(
            f"{who.name} says {who.she} might relocate to {c.other(CITIES, c1, c2, c3)} for the new office.",
            c.reply(["That would be a big change for them."], ["Everyone's on the move."]),
        ),
    ]
    return Plan(
        "home",
        [Episode("home", [t0]), Episode("home", move), Episode("home", again)],
        qs,
        distractors,
    )


def m_job(c: Ctx) -> Plan:
    co1, co2 = c.rng.sample(COMPANIES, 2)
    role1, role2 = c.rng.sample(ROLES, 2)
    t0 = Turn(
        f"Another late night at work. Being the only {role1} at {co1} means release week eats everything.",
        c.reply(["That sounds like a heavy load for one person."], ["They don't pay you enough."]),
        "job:old",
    )
    qs = [
        QSpec(
            "single_fact",
            c.pick(
                [
                    f"What position did {c.P} hold at {co1}?",
                    f"What was {c.Ps} job title at {co1}?",
                ]
            ),
            ["job:old"],
            role1,
        )
    ]
    if c.rng.random() < NEIGHBOUR_SHARE:
        new = [
            Turn(
                "First day at the new job today! Nobody warned me about the onboarding quiz.",
                c.pick(GOOD_NEWS[c.mode]),
                "job:start",
            ),
            Turn(
                f"{co2} gives everyone a plant for their desk, and the {role2} team has lunch "
                "together on Fridays. I think I'll like working there.",
                c.reply(["That sounds like a thoughtful team culture."], ["A plant! Cute."]),
                "job:co2",
            ),
        ]
        qs.append(
            QSpec(
                "temporal",
                f"When did {c.P} begin working for {co2}?",
                ["job:start"],
                neighbour=True,
                support=["job:co2"],
                date_of=("job:start", "today"),
            )
        )
        qs.append(
            QSpec(
                "knowledge_update",
                c.pick([f"Which company employs {c.P} now?", f"Where is {c.P} working now?"]),
                ["job:co2"],
                co2,
                neighbour=True,
                support=["job:start"],
            )
        )
    else:
        new = [
            Turn(
                f"Today was my first day of work as {an(role2)} at {co2}! Got my badge and a very "
                "heavy laptop.",
                c.pick(GOOD_NEWS[c.mode]),
                "job:start",
            )
        ]
        qs.append(
            QSpec(
                "temporal",
                c.pick(
                    [
                        f"When did {c.P} begin working for {co2}?",
                        f"On what date did {c.P} join {co2}?",
                    ]
                ),
                ["job:start"],
                date_of=("job:start", "today"),
            )
        )
        qs.append(
            QSpec(
                "knowledge_update",
                c.pick([f"Who is {c.Ps} current employer?", f"Where does {c.P} work these days?"]),
                ["job:start"],
                co2,
            )
        )
    other = c.other(COMPANIES, co1, co2)
    distractors = [
        Turn(
            f"{other} had a booth at the conference and their free tote bags fell apart instantly.",
            c.reply(["Conference swag quality varies wildly."], ["Peak corporate."]),
        ),
        Turn(
            f"A recruiter from {other} messaged me about {an(c.pick(ROLES))} role, I ignored it.",
            c.reply(["It's always nice to be asked, at least."], ["Recruiters never sleep."]),
        ),
    ]
    return Plan("job", [Episode("work", [t0]), Episode("work", new)], qs, distractors)


def m_friend(c: Ctx, slot: int) -> Plan:
    place, place_q, doing = c.pick([p for p in PLACES if p[0] != c.facts.get("place1")])
    c.facts[f"place{slot}"] = place
    friend = c.person(c.facts.get("friend1", ""))
    c.facts[f"friend{slot}"] = friend.name
    city = c.other(CITIES, *c.facts.get("cities", "").split(","), c.facts.get("friend_city", ""))
    gift = c.other(GIFTS, c.facts.get("gift", ""))
    c.facts.update(friend_city=city, gift=gift)
    k = f"friend{slot}"
    qs: list[QSpec] = []
    if c.rng.random() < NEIGHBOUR_SHARE:
        meet = [
            Turn(
                f"Went to the {place} for the first time tonight, I'm exhausted but happy.",
                c.reply(["Trying something new is brilliant. How was it?"], ["Proud of you!"]),
                f"{k}:place",
            ),
            Turn(
                f"Also made a new friend there, {friend.name}, who {doing}.",
                c.reply([f"It's lovely to meet people that way. {friend.name} sounds fun."],
                        [f"Replacing me with {friend.name} already?"]),
                f"{k}:meet",
            ),
        ]  # fmt: skip
        qs.append(
            QSpec(
                "single_fact",
                f"Who did {c.P} get to know at the {place_q}?",
                [f"{k}:meet"],
                friend.name,
                neighbour=True,
                support=[f"{k}:place"],
            )
        )
        hop_neighbour = True
    else:
        meet = [
            Turn(
                f"Met someone called {friend.name} at the {place} tonight — {friend.she} "
                f"{doing}, and we ended up grabbing tea after.",
                c.reply(["That's a lovely way to make a new friend."], ["A new friend! Details!"]),
                f"{k}:meet",
            )
        ]
        qs.append(
            QSpec(
                "single_fact",
                c.pick(
                    [
                        f"What's the name of the person {c.P} befriended at the {place_q}?",
                        f"Who is {c.Ps} new acquaintance from the {place_q}?",
                    ]
                ),
                [f"{k}:meet"],
                friend.name,
            )
        )
        hop_neighbour = False
    lives = Turn(
        f"Had a long video call with {friend.name}. {cap(friend.she)}'s been living in {city} "
        "for years and keeps telling me to visit.",
        c.reply([f"A visit to {city} sounds like a great excuse for a trip."],
                ["Go! Take me with you."]),
        f"{k}:city",
    )  # fmt: skip
    present = Turn(
        f"Bought {friend.name} {gift} for {friend.her} birthday, I hope {friend.she} likes it.",
        c.reply(["That's a thoughtful present."], ["Great choice, you're good at gifts."]),
        f"{k}:gift",
    )
    support = [f"{k}:place"] if hop_neighbour else []
    qs.append(
        QSpec(
            "multi_hop",
            c.pick(
                [
                    f"What city does the friend {c.P} met at the {place_q} live in?",
                    f"Where does {c.Ps} friend from the {place_q} live?",
                ]
            ),
            [f"{k}:meet", f"{k}:city"],
            city,
            neighbour=hop_neighbour,
            support=support,
        )
    )
    qs.append(
        QSpec(
            "multi_hop",
            f"What birthday present did {c.P} get for the friend from the {place_q}?",
            [f"{k}:meet", f"{k}:gift"],
            gift,
            neighbour=hop_neighbour,
            support=support,
        )
    )
    other = c.person(friend.name)
    distractors = [
        Turn(
            f"My sister-in-law met {other.name} at a {place} once, small world.",
            c.reply(["It really is a small world."], ["Everyone knows everyone."]),
        ),
    ]
    chain = [Episode("hobbies", meet)]
    tail = [Episode("social", [lives]), Episode("social", [present])]
    c.rng.shuffle(tail)
    return Plan(k, chain + tail, qs, distractors)


def m_sibling(c: Ctx) -> Plan:
    rel = c.pick(["sister", "brother"])
    sib = Person.of(c.pick(WOMEN if rel == "sister" else MEN), "f" if rel == "sister" else "m")
    c.facts["sibling"] = rel
    job, training = c.pick(JOBS)
    qs: list[QSpec] = []
    if c.rng.random() < NEIGHBOUR_SHARE:
        intro = [
            Turn(
                f"The guest room is finally getting used: my little {rel} is staying for the weekend.",
                c.reply(["That sounds like a lovely weekend."], ["Family weekend! Cute."]),
                "sib:visit",
            ),
            Turn(
                f"{sib.name} brought {sib.her} own pillow, which tells you everything.",
                c.reply([f"{sib.name} clearly knows what {sib.she} likes."], ["Iconic."]),
                "sib:name",
            ),
        ]
        qs.append(
            QSpec(
                "single_fact",
                f"What is {c.Ps} younger {rel} called?",
                ["sib:name"],
                sib.name,
                neighbour=True,
                support=["sib:visit"],
            )
        )
        hop_neighbour = True
    else:
        intro = [
            Turn(
                f"My {rel} {sib.name} is staying with us this weekend, so the house is loud again.",
                c.reply(["Enjoy the time together!"], [f"Say hi to {sib.name} from me!"]),
                "sib:name",
            )
        ]
        qs.append(
            QSpec(
                "single_fact",
                c.pick([f"What is {c.Ps} {rel} called?", f"What's the name of {c.Ps} {rel}?"]),
                ["sib:name"],
                sib.name,
            )
        )
        hop_neighbour = False
    career = Turn(
        f"{sib.name} finally finished {sib.her} {training} training, {sib.she}'s officially {an(job)} now!",
        c.pick(GOOD_NEWS[c.mode]),
        "sib:job",
    )
    qs.append(
        QSpec(
            "multi_hop",
            c.pick(
                [
                    f"What does {c.Ps} {rel} do for a living?",
                    f"What is the profession of {c.Ps} {rel}?",
                ]
            ),
            ["sib:name", "sib:job"],
            job,
            neighbour=hop_neighbour,
            support=["sib:visit"] if hop_neighbour else [],
        )
    )
    colleague = c.person()
    distractors = [
        Turn(
            f"{colleague.name}'s {rel} is {an(c.other([j for j, _ in JOBS], job))}, apparently.",
            c.reply(["Interesting!"], ["Huh, didn't know that."]),
        )
    ]
    return Plan("sibling", [Episode("social", intro), Episode("social", [career])], qs, distractors)


def m_partner(c: Ctx) -> Plan:
    partner = c.person(c.facts.get("friend1", ""), c.facts.get("friend2", ""))
    c.facts["partner"] = partner.name
    town = c.pick(HOMETOWNS)
    t1 = Turn(
        c.pick(
            [
                f"{partner.name} and I celebrated five years together last night, we went back "
                "to the restaurant of our first date.",
                f"Five years in this relationship as of yesterday! {partner.name} booked the "
                "restaurant of our first date.",
            ]
        ),
        c.reply(["Happy anniversary! Five years is a lovely milestone."],
                ["Five years!! You two are the cutest."]),
        "partner:name",
    )  # fmt: skip
    t2 = Turn(
        f"{partner.name} is dragging me to {town} for the holidays — it's {partner.her} "
        "hometown and I'm meeting every single aunt.",
        c.reply([f"That sounds like a warm, busy holiday in {town}."], ["Every aunt. Good luck."]),
        "partner:town",
    )
    qs = [
        QSpec(
            "single_fact",
            c.pick([f"What is the name of {c.Ps} partner?", f"Who is {c.P} in a relationship with?"]),
            ["partner:name"],
            partner.name,
        ),
        QSpec(
            "multi_hop",
            c.pick(
                [
                    f"Where is {c.Ps} partner originally from?",
                    f"What is the hometown of {c.Ps} partner?",
                ]
            ),
            ["partner:name", "partner:town"],
            town,
        ),
    ]
    when = c.pick([w for w, _ in WHEN])
    prop = Turn(
        f"{partner.name} proposed {when}! On a hill, in the rain, with the engagement ring hidden in a sock.",
        c.pick(GOOD_NEWS[c.mode]),
        "partner:engaged",
    )
    qs.append(
        QSpec(
            "temporal",
            c.pick([f"When did {c.P} get engaged?", f"When did {c.Ps} partner propose?"]),
            ["partner:engaged"],
            date_of=("partner:engaged", when),
        )
    )
    friend = c.person(partner.name)
    distractors = [
        Turn(
            f"{friend.name} and {friend.her} boyfriend are celebrating their anniversary in "
            f"{c.pick(HOMETOWNS)}.",
            c.reply(["How romantic."], ["Cute."]),
        )
    ]
    return Plan(
        "partner",
        [Episode("social", [t1]), Episode("social", [t2]), Episode("social", [prop])],
        qs,
        distractors,
    )


def m_class(c: Ctx) -> Plan:
    name, said, para, progress = c.pick(CLASSES)
    teacher = c.pick(TEACHERS)
    when = c.pick(["today", "yesterday", "this morning"])
    t1 = Turn(
        f"Had my first {said} lesson {when}, and I was by far the worst in the room.",
        c.reply(["Everyone starts somewhere — well done for going!"], ["Worst in the room is a start!"]),
        "class:start",
    )
    t2 = Turn(
        f"My teacher, {teacher}, says I'm improving, and {progress}.",
        c.reply(["Steady progress is the best kind."], ["Look at you go!"]),
        "class:teacher",
    )
    qs = [
        QSpec(
            "temporal",
            f"When did {c.P} begin taking {para} lessons?"
            if para != "language"
            else f"When did {c.P} start studying {said}?",
            ["class:start"],
            date_of=("class:start", when),
        ),
        QSpec(
            "multi_hop",
            c.pick([f"Who teaches {c.Ps} {para} class?", f"Who is {c.Ps} {para} teacher?"]),
            ["class:start", "class:teacher"],
            teacher,
        ),
    ]
    return Plan("class", [Episode("hobbies", [t1]), Episode("hobbies", [t2])], qs)


def m_car(c: Ctx) -> Plan:
    car1, car2 = c.rng.sample(CARS, 2)
    t1 = Turn(
        f"My old {car1} made that grinding noise again on the drive home.",
        c.reply(["That's worth getting checked soon, grinding can mean brakes."],
                ["That car is held together by hope."]),
        "car:old",
    )  # fmt: skip
    if c.rng.random() < NEIGHBOUR_SHARE:
        new = [
            Turn(
                "Said goodbye to the old car today, the buyer paid cash and drove off grinning.",
                c.reply(["End of an era!"], ["RIP grinding noise."]),
                "car:sold",
            ),
            Turn(
                f"Its replacement is a second-hand {car2}. Boring to drive, reliable, perfect.",
                c.reply(["Reliable is exactly what you want."], ["Boring is the new cool."]),
                "car:new",
            ),
        ]
        q = QSpec(
            "knowledge_update",
            f"What car does {c.P} drive now?",
            ["car:new"],
            car2,
            neighbour=True,
            support=["car:sold"],
        )
    else:
        new = [
            Turn(
                f"Sold the {car1} at last and picked up {an(car2)}. Driving it feels strange, "
                "it smells like someone else's air freshener.",
                c.reply(["Congratulations on the new wheels!"], ["New car smell, but used."]),
                "car:new",
            )
        ]
        q = QSpec(
            "knowledge_update",
            c.pick(
                [
                    f"What vehicle does {c.P} drive nowadays?",
                    f"Which car is {c.P} driving currently?",
                ]
            ),
            ["car:new"],
            car2,
        )
    distractors = [
        Turn(
            f"My brother-in-law keeps trying to sell me his {c.other(CARS, car1, car2)}.",
            c.reply(["A family deal can be good if it's been well maintained."], ["Run."]),
        )
    ]
    return Plan("car", [Episode("shopping", [t1]), Episode("shopping", new)], [q], distractors)


def m_diet(c: Ctx) -> Plan:
    d1, d2 = c.pick(DIETS)
    t1 = Turn(
        f"I've been {d1} for about four years, so my diet at the work barbecue was mostly bread.",
        c.reply(["Bringing a dish of your own next time could help."], ["Bread is a meal."]),
        "diet:old",
    )
    t2 = Turn(
        f"Small update on the food front: I've gone {d2} since last month, and honestly I feel "
        "great eating this way.",
        c.pick(ACK[c.mode]),
        "diet:new",
    )
    q = QSpec(
        "knowledge_update",
        c.pick(
            [
                f"What way of eating does {c.P} follow at present?",
                f"What diet is {c.P} on these days?",
                f"What does {c.P} eat these days, diet-wise?",
            ]
        ),
        ["diet:new"],
        d2,
    )
    return Plan("diet", [Episode("food", [t1]), Episode("food", [t2])], [q])


def m_phone(c: Ctx) -> Plan:
    p1, p2 = c.rng.sample(PHONES, 2)
    t1 = Turn(
        f"My {p1} battery barely lasts until lunch now, this phone is dying.",
        c.reply(["A battery replacement might give it a second life."], ["Phones are built to die."]),
        "phone:old",
    )
    t2 = Turn(
        f"Caved and switched to {an(p2)}, still figuring out where all the settings live on the new phone.",
        c.reply(["Switching takes a week or two to feel natural."], ["Welcome to the other side."]),
        "phone:new",
    )
    q = QSpec(
        "knowledge_update",
        c.pick([f"Which phone does {c.P} use now?", f"What mobile does {c.P} currently have?"]),
        ["phone:new"],
        p2,
    )
    return Plan("phone", [Episode("tech", [t1]), Episode("tech", [t2])], [q])


def m_sport(c: Ctx) -> Plan:
    (s1, did1, _), (s2, _, _) = c.rng.sample(SPORTS, 2)
    t1 = Turn(
        f"Did {did1} today, my usual workout, and my knees are filing a complaint.",
        c.reply(["Good effort! Make sure to stretch."], ["Knees are overrated."]),
        "sport:old",
    )
    t2 = Turn(
        f"I've stopped {s1} for now: {s2} three times a week is my workout now, much kinder on the joints.",
        c.pick(ACK[c.mode]),
        "sport:new",
    )
    q = QSpec(
        "knowledge_update",
        c.pick(
            [
                f"What is {c.Ps} main form of exercise these days?",
                f"What does {c.P} do for a workout now?",
            ]
        ),
        ["sport:new"],
        s2,
    )
    return Plan("sport", [Episode("fitness", [t1]), Episode("fitness", [t2])], [q])


def m_trip(c: Ctx) -> Plan:
    dest = c.pick(DESTINATIONS)
    c.facts["trip"] = dest
    when = c.pick(["today", "yesterday", "last weekend"])
    if c.rng.random() < NEIGHBOUR_SHARE:
        turns = [
            Turn(
                f"Home at last {when}! Eleven hours of delays and a lost suitcase.",
                c.reply(["Welcome back — what a journey."], ["Nightmare travel, welcome home!"]),
                "trip:back",
            ),
            Turn(
                f"{dest} was worth every minute of it though, I'd go again tomorrow.",
                c.reply(["That's the sign of a great trip."], ["I'm so jealous."]),
                "trip:dest",
            ),
        ]
        q = QSpec(
            "temporal",
            f"When did {c.P} return from {dest}?",
            ["trip:back"],
            neighbour=True,
            support=["trip:dest"],
            date_of=("trip:back", when),
        )
    else:
        turns = [
            Turn(
                f"Just got back from {dest} {when} and the jet lag is brutal.",
                c.reply(["Welcome back! Get some daylight to reset."], ["Welcome home! Photos?"]),
                "trip:back",
            )
        ]
        q = QSpec(
            "temporal",
            c.pick([f"When did {c.P} come home from {dest}?", f"When did {c.P} return from {dest}?"]),
            ["trip:back"],
            date_of=("trip:back", when),
        )
    distractors = [
        Turn(
            f"A friend is flying to {c.other(DESTINATIONS, dest)} next week, I'm jealous.",
            c.reply(["Maybe a trip of your own is due soon."], ["Same, honestly."]),
        )
    ]
    return Plan("trip", [Episode("travel", turns)], [q], distractors)


def m_race(c: Ctx) -> Plan:
    city = c.pick(CITIES)
    result = c.pick(RACE_TIMES)
    when = c.pick(["today", "yesterday", "this morning"])
    t = Turn(
        f"Ran the {city} half marathon {when} — {result}, a new personal best!",
        c.pick(GOOD_NEWS[c.mode]),
        "race:run",
    )
    qs = [
        QSpec(
            "temporal",
            f"When did {c.P} do the 21-kilometre race in {city}?",
            ["race:run"],
            date_of=("race:run", when),
        ),
        QSpec(
            "single_fact",
            c.pick(
                [
                    f"What was {c.Ps} finishing time in the {city} half?",
                    f"How fast did {c.P} complete the {city} 21k?",
                ]
            ),
            ["race:run"],
            result,
        ),
    ]
    distractors = [
        Turn(
            f"The {c.other(CITIES, city)} marathon closed half the roads this morning.",
            c.reply(["Race days do make getting around tricky."], ["Runners everywhere."]),
        )
    ]
    return Plan("race", [Episode("fitness", [t])], qs, distractors)


def m_concert(c: Ctx) -> Plan:
    band = c.pick(BANDS)
    when = c.pick(["yesterday", "last weekend"])
    phrase = "last night" if when == "yesterday" else "last weekend"
    t = Turn(
        f"Saw {band} live {phrase}, my ears are still ringing.",
        c.reply(["Sounds like a great night out!"], ["Jealous! Were they good?"]),
        "gig:seen",
    )
    q = QSpec(
        "temporal",
        c.pick([f"When did {c.P} see {band} in concert?", f"When was {c.Ps} {band} gig?"]),
        ["gig:seen"],
        date_of=("gig:seen", when),
    )
    distractors = [
        Turn(
            f"{band} announced another tour date, the tickets sold out in minutes.",
            c.reply(["Popular band!"], ["Chaos."]),
        )
    ]
    return Plan("concert", [Episode("entertainment", [t])], [q], distractors)


def m_injury(c: Ctx) -> Plan:
    what, part, how = c.pick(INJURIES)
    when = c.pick(["yesterday", "last weekend", "this morning"])
    t = Turn(f"I {how} {when} and {what}.", c.pick(SYMPATHY[c.mode]), "injury:hurt")
    q = QSpec(
        "temporal",
        f"When did {c.P} injure {c.me.her} {part}?",
        ["injury:hurt"],
        date_of=("injury:hurt", when),
    )
    return Plan("injury", [Episode("health", [t])], [q])


def m_purchase(c: Ctx, slot: int) -> Plan:
    cat, said, asked, models = c.pick([p for p in PURCHASES if p[0] != c.facts.get("purchase1")])
    c.facts[f"purchase{slot}"] = cat
    model = c.pick(models)
    k = f"buy{slot}"
    if c.rng.random() < NEIGHBOUR_SHARE:
        turns = [
            Turn(
                f"I've been reading {asked} reviews for weeks and I'm losing my mind.",
                c.reply(
                    ["What matters most to you — price, size, or features?"],
                    ["Just pick one! What are you leaning towards?"],
                ),
                f"{k}:research",
            ),  # fmt: skip
            Turn(
                f"Ordered the {model} in the end, it arrives Thursday.",
                c.reply(["Great choice — it's very well reviewed."], ["Finally! Congrats."]),
                f"{k}:model",
            ),
        ]
        q = QSpec(
            "single_fact",
            f"Which {asked} did {c.P} end up buying?",
            [f"{k}:model"],
            model,
            neighbour=True,
            support=[f"{k}:research"],
        )
    else:
        turns = [
            Turn(
                f"Treated myself to the {model} — the {said} I've been eyeing for months.",
                c.reply(["You've earned it! Enjoy."], ["Treat yourself, always."]),
                f"{k}:model",
            )
        ]
        q = QSpec(
            "single_fact",
            c.pick([f"Which {asked} did {c.P} buy?", f"What {asked} model did {c.P} go for?"]),
            [f"{k}:model"],
            model,
        )
    distractors = [
        Turn(
            f"{c.person().name} wants the {c.other(models, model)}, but it's double the price.",
            c.reply(["Price differences like that add up."], ["Too rich for me."]),
        )
    ]
    return Plan(k, [Episode("shopping", turns)], [q], distractors)


def m_plan(c: Ctx) -> Plan:
    said, asked = c.pick(PLAN_KINDS)
    place = c.pick(PLAN_PLACES)
    month = c.pick(MONTHS)
    t = Turn(
        f"We've pencilled in a {said} in {place} for {month}, just need to book it.",
        c.reply(["That sounds wonderful — booking early helps with prices."], ["Take me!!"]),
        "plan:trip",
    )
    q = QSpec(
        "single_fact",
        f"Where does {c.P} intend to go on a {asked} in {month}?",
        ["plan:trip"],
        place,
    )
    return Plan("plan", [Episode("travel", [t])], [q])


def m_allergy(c: Ctx) -> Plan:
    allergen = c.pick(ALLERGENS)
    if c.rng.random() < 0.5:
        turns = [
            Turn(
                "Got my allergy test results back from the clinic today.",
                c.reply(["Any surprises?"], ["And?? Don't leave me hanging."]),
                "allergy:test",
            ),
            Turn(
                f"It's {allergen}. Of all things. That explains a lot about last spring.",
                c.pick(ACK[c.mode]),
                "allergy:what",
            ),
        ]
        q = QSpec(
            "single_fact",
            f"What is {c.P} allergic to?",
            ["allergy:what"],
            allergen,
            neighbour=True,
            support=["allergy:test"],
        )
    else:
        turns = [
            Turn(
                f"Found out I'm allergic to {allergen}, which is why my throat felt weird.",
                c.pick(SYMPATHY[c.mode]),
                "allergy:what",
            )
        ]
        q = QSpec(
            "single_fact",
            c.pick([f"What allergy does {c.P} have?", f"What does {c.P} react badly to?"]),
            ["allergy:what"],
            allergen,
        )
    return Plan("allergy", [Episode("health", turns)], [q])


# Preference modules: the answer, the turn that states it directly, optionally a setup
# (a first turn carrying the topic word, the partner's replies, then the bare answer) and
# the questions; a split preference is asked with `neighbour_questions` when given.
def _pref(c: Ctx, name: str, topic: str, answer: str, direct: str,
          setup: tuple[str, list[str], list[str], str] | None, questions: list[str],
          neighbour_questions: list[str] | None = None) -> Plan:  # fmt: skip
    key = f"pref-{name}"
    if setup is not None and c.rng.random() < NEIGHBOUR_SHARE:
        first, assistant, friend, second = setup
        turns = [
            Turn(first, c.reply(assistant, friend), f"{key}:setup"),
            Turn(second, c.pick(ACK[c.mode]), f"{key}:value"),
        ]
        q = QSpec(
            "preference",
            c.pick(neighbour_questions or questions),
            [f"{key}:value"],
            answer,
            neighbour=True,
            support=[f"{key}:setup"],
        )
    else:
        turns = [Turn(direct, c.pick(ACK[c.mode]), f"{key}:value")]
        q = QSpec("preference", c.pick(questions), [f"{key}:value"], answer)
    return Plan(key, [Episode(topic, turns)], [q])


def p_laptop(c: Ctx) -> Plan:
    brand = c.pick(["Lenovo", "Dell", "Apple", "Asus", "HP", "Framework"])
    return _pref(
        c, "laptop", "tech", brand,
        f"I'll only ever buy {brand} laptops for work, no other keyboard feels right.",
        ("My laptop died in the middle of a presentation, I need a new one.",
         ["Sorry to hear that! Is there a brand you tend to trust?"],
         ["RIP. Getting the same again?"],
         f"{brand}, obviously. I've had three and not one of them let me down."),
        [f"Which computer maker does {c.P} favour?", f"What laptop brand is {c.P} loyal to?"],
        [f"Which laptop brand does {c.P} prefer?"],
    )  # fmt: skip


def p_coffee(c: Ctx) -> Plan:
    drink = c.pick(["flat white", "oat latte", "black americano", "cortado", "double espresso"])
    return _pref(
        c, "coffee", "food", drink,
        f"Nothing fancy for my morning coffee: {an(drink)}, no sugar.",
        ("The queue at the café this morning was out the door.",
         ["Did you at least get your usual order?"], ["Worth it for your usual though?"],
         f"Of course, {an(drink)}. Without it I'm not a person."),
        [f"What's {c.Ps} usual coffee?", f"How does {c.P} take {c.me.her} coffee?"],
        [f"What does {c.P} usually order at the café?"],
    )  # fmt: skip


def p_cuisine(c: Ctx) -> Plan:
    cuisine, dish = c.pick([
        ("Thai", "green curry"), ("Ethiopian", "injera"), ("Lebanese", "mezze"),
        ("Korean", "bibimbap"), ("Mexican", "tacos al pastor"), ("Georgian", "khachapuri"),
        ("Vietnamese", "pho"), ("Sichuan", "mapo tofu"),
    ])  # fmt: skip
    return _pref(
        c, "cuisine", "food", cuisine,
        f"If I could only eat one kind of food forever it would be {cuisine}, {dish} especially.",
        ("Trying to decide what food to get for my birthday dinner.",
         ["What are you in the mood for?"], ["Ooh, what are you craving?"],
         f"{cuisine}, always {cuisine}. The {dish} at that little place is unreal."),
        [f"Which cuisine does {c.P} like best?", f"What type of food is {c.Ps} favourite?"],
    )  # fmt: skip


def p_dislike(c: Ctx) -> Plan:
    food = c.pick(["coriander", "olives", "mushrooms", "blue cheese", "anchovies", "raisins"])
    return _pref(
        c, "dislike", "food", food,
        f"Can we leave the {food} out? I genuinely can't stand it, it ruins any food it touches.",
        None,
        [f"Which ingredient does {c.P} hate?", f"What food can {c.P} not stand?"],
    )  # fmt: skip


def p_music(c: Ctx) -> Plan:
    genre = c.pick(["jazz", "synth-pop", "bluegrass", "drum and bass", "classical", "indie folk",
                    "afrobeat", "metal"])  # fmt: skip
    return _pref(
        c, "music", "entertainment", genre,
        f"I've had nothing but {genre} on in the flat all week, that music is my personality now.",
        ("Made a new music playlist for the commute this morning.",
         ["Nice! What's on it?"], ["Ooh send it, what's on it?"],
         f"Mostly {genre}, some old, some new. It makes the bus bearable."),
        [f"What style of music is {c.P} into?", f"What kind of music does {c.P} enjoy?"],
    )  # fmt: skip


def p_shoes(c: Ctx) -> Plan:
    brand = c.pick(["Asics", "Hoka", "Brooks", "Saucony", "New Balance", "Mizuno"])
    return _pref(
        c, "shoes", "fitness", brand,
        f"{brand} is the only brand I run in, anything else gives me blisters by kilometre five.",
        ("My running shoes have a hole in the toe now.",
         ["Time for a new pair! Will you stick with the same brand?"], ["Same brand again?"],
         f"Always {brand}. I tried others once and my feet never forgave me."),
        [f"Which brand of trainers does {c.P} swear by?"],
        [f"What running shoe brand does {c.P} prefer?"],
    )  # fmt: skip


def p_holiday(c: Ctx) -> Plan:
    likes = c.pick(["mountains", "the beach"])
    other = "the beach" if likes == "mountains" else "mountains"
    why = "cold air and a view" if likes == "mountains" else "sand, sun and a paperback"
    return _pref(
        c, "holiday", "travel", likes,
        f"Give me {likes} over {other} any day — {why}, that's all I need.",
        None,
        [f"Does {c.P} prefer seaside or mountain holidays?"],
    )  # fmt: skip


def p_books(c: Ctx) -> Plan:
    genre = c.pick(["crime novels", "science fiction", "historical fiction", "fantasy",
                    "memoirs", "poetry"])  # fmt: skip
    return _pref(
        c, "books", "hobbies", genre,
        f"I mostly read {genre}, the darker the better.",
        ("Finished another book on the train today.",
         ["What do you usually go for?"], ["What's your usual pick again?"],
         f"{cap(genre)}, nearly always. I can't help myself."),
        [f"What genre of books does {c.P} enjoy most?", f"What does {c.P} like to read?"],
    )  # fmt: skip


def p_season(c: Ctx) -> Plan:
    season = c.pick(["autumn", "winter", "spring", "summer"])
    return _pref(
        c, "season", "weekend", season,
        f"{cap(season)} is the best season and I will not be taking questions.",
        None,
        [f"Which time of year does {c.P} love most?", f"What is {c.Ps} favourite season?"],
    )  # fmt: skip


def p_seat(c: Ctx) -> Plan:
    seat = c.pick(["window", "aisle"])
    return _pref(
        c, "seat", "travel", f"{seat} seat",
        f"Booked the flights — {seat} seat for me, I refuse anything else.",
        ("Booking the flights for the trip now.",
         ["Great! Window seat or aisle seat?"], ["Window seat or aisle, I need to know."],
         f"{cap(seat)} seat, always. It's non-negotiable."),
        [f"Where does {c.P} like to sit on a plane?", f"Which seat does {c.P} pick when flying?"],
    )  # fmt: skip


def p_chronotype(c: Ctx) -> Plan:
    owl = c.rng.random() < 0.5
    said = "a total night owl, useless in the morning, wide awake at ten pm" if owl else (
        "an early bird, I'm useless after nine in the evening")  # fmt: skip
    return _pref(
        c, "chrono", "health", "night owl" if owl else "early bird",
        f"I'm {said}.",
        None,
        [f"Is {c.P} a morning person or an evening person?"],
    )  # fmt: skip


PREFERENCES = [p_laptop, p_coffee, p_cuisine, p_dislike, p_music, p_shoes, p_holiday, p_books,
               p_season, p_seat, p_chronotype]  # fmt: skip

# --------------------------------------------------------------------------- abstention


def abstention_questions(c: Ctx, planted: set[str]) -> list[str]:
    """Questions about things this user never said (other users often did)."""
    qs = [
        f"Which university did {c.P} graduate from?",
        f"What is the name of {c.Ps} personal trainer?",
        f"What is {c.Ps} blood type?",
        f"How many children does {c.P} have?",
        f"Which football team does {c.P} support?",
        f"Where did {c.P} go on honeymoon?",
        f"What is {c.Ps} middle name?",
        f"Which streaming service does {c.P} pay for?",
        f"What did {c.P} name {c.me.her} goldfish?",
        f"What is the name of {c.Ps} boss?",
        f"Which instrument did {c.P} play as a child?",
        f"What is {c.Ps} grandmother's name?",
    ]
    species = c.facts.get("species")
    for kind in ("dog", "cat", "rabbit"):
        if kind != species:
            qs.append(f"What is the name of {c.Ps} {kind}?")
    if "pet" not in planted:
        qs.append(f"Who is the vet for {c.Ps} pet?")
    sibling = c.facts.get("sibling")
    if sibling != "brother":
        qs.append(f"What does {c.Ps} brother do for work?")
    if sibling != "sister":
        qs.append(f"What is {c.Ps} sister called?")
    if "car" not in planted:
        qs.append(f"What car does {c.P} drive?")
    if "partner" not in planted:
        qs.append(f"What is the name of {c.Ps} partner?")
    if "trip" not in planted:
        qs.append(f"When did {c.P} get back from {c.pick(DESTINATIONS)}?")
    else:
        qs.append(f"When did {c.P} visit {c.other(DESTINATIONS, c.facts['trip'])}?")
    if "race" not in planted:
        qs.append(f"What was {c.Ps} marathon finishing time?")
    if "class" not in planted:
        qs.append(f"Who teaches {c.Ps} pottery class?")
    return qs


# --------------------------------------------------------------------------- assembly


@dataclass
class Session:
    day: date
    episodes: list[Episode] = field(default_factory=list)
    extra: list[Turn] = field(default_factory=list)

    def used(self) -> int:
        return sum(len(e.turns) for e in self.episodes) + len(self.extra)


def _plans_for(c: Ctx) -> list[Plan]:
    plans = [
        m_pet(c), m_home(c), m_job(c), m_friend(c, 1), m_friend(c, 2), m_sibling(c),
        m_partner(c), m_class(c), m_car(c), m_diet(c), m_phone(c), m_sport(c), m_trip(c),
        m_race(c), m_concert(c), m_injury(c), m_purchase(c, 1), m_purchase(c, 2), m_plan(c),
        m_allergy(c),
    ]  # fmt: skip
    plans += [make(c) for make in c.rng.sample(PREFERENCES, 8)]
    c.rng.shuffle(plans)
    return plans


def _place(rng: random.Random, sessions: list[Session], plan: Plan, room: int, most: int) -> bool:
    """Put a plan's episodes into strictly increasing sessions that have room for them."""
    n = len(plan.chain)
    for _ in range(60):
        picks = sorted(rng.sample(range(len(sessions)), n)) if n <= len(sessions) else []
        if not picks:
            return False
        if all(
            len(sessions[i].episodes) < most and sessions[i].used() + len(e.turns) <= room
            for i, e in zip(picks, plan.chain, strict=True)
        ):
            for i, e in zip(picks, plan.chain, strict=True):
                sessions[i].episodes.append(e)
            return True
    return False


def _filler(c: Ctx, topic: str, used: set[tuple[str, str, str]]) -> Turn:
    """Small talk on the session's topic; a user hears each line once while lines last."""
    fresh = [t for t in FILLER[topic] if t not in used]
    fresh = fresh or [t for ts in FILLER.values() for t in ts if t not in used] or FILLER[topic]
    triple = c.pick(fresh)
    used.add(triple)
    slots = {k: c.pick(v) for k, v in SLOTS.items()}
    query, assistant, friend = (x.format(**slots) for x in triple)
    return Turn(query, assistant if c.mode == "assistant" else friend)


def _user(
    rng: random.Random, index: int, width: int, n_sessions: int, n_turns: int
) -> tuple[list[dict], list[dict]]:
    name, gender = PERSONAS[index % len(PERSONAS)]
    uid = f"u{index + 1:0{width}d}"
    mode = "friend" if index % 2 else "assistant"
    speaker = FRIEND_SPEAKERS[index % len(FRIEND_SPEAKERS)] if mode == "friend" else "Assistant"
    c = Ctx(uid, Person.of(name, gender), mode, speaker, rng)

    start = date(2025, 6, 1) + timedelta(days=rng.randrange(0, 150))
    span = max(rng.randrange(180, 361), n_sessions)
    days = sorted(start + timedelta(days=d) for d in rng.sample(range(span), n_sessions))
    sessions = [Session(d) for d in days]
    reserved = 1 + (1 if n_turns >= 8 else 0)
    room = max(0, n_turns - reserved)
    most = max(1, (n_turns - 2) // 3)

    planted: set[str] = set()
    questions: list[QSpec] = []
    distractors: list[Turn] = []
    for plan in _plans_for(c):
        if _place(rng, sessions, plan, room, most):
            planted.add(plan.name)
            questions += plan.questions
            distractors += [d for d in plan.distractors if rng.random() < 0.7]
    for turn in distractors:
        free = [s for s in sessions if s.used() < room]
        if free:
            rng.choice(free).extra.append(turn)

    conversations: list[dict] = []
    where: dict[str, tuple[str, date]] = {}
    used: set[tuple[str, str, str]] = set()
    sw = max(2, len(str(n_sessions)))
    tw = max(2, len(str(n_turns)))
    for s_no, session in enumerate(sessions, 1):
        topic = session.episodes[0].topic if session.episodes else c.pick(sorted(FILLER))
        blocks: list[list[Turn]] = [e.turns for e in session.episodes]
        blocks += [[t] for t in session.extra]
        for _ in range(room - session.used()):
            drift = rng.random() < 0.2  # conversations wander off topic now and then
            blocks.append([_filler(c, c.pick(sorted(FILLER)) if drift else topic, used)])
        rng.shuffle(blocks)
        opener = Turn(*(x.format(P=c.P, F=speaker) for x in c.pick(OPENERS[mode])))
        turns = [opener] + [t for block in blocks for t in block]
        if reserved == 2:
            turns.append(Turn(*c.pick(CLOSERS[mode])))
        turns = turns[:n_turns]
        clock = datetime.combine(session.day, time(rng.randrange(7, 21), rng.randrange(60)))
        session_id = f"{uid}-s{s_no:0{sw}d}"
        for t_no, turn in enumerate(turns, 1):
            external_id = f"{session_id}-t{t_no:0{tw}d}"
            if turn.key:
                where[turn.key] = (external_id, session.day)
            conversations.append(
                {
                    "user": uid,
                    "external_id": external_id,
                    "timestamp": clock.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "query": turn.query,
                    "response": turn.response,
                    "meta": {
                        "session": session_id,
                        "day": session.day.isoformat(),
                        "speakers": [c.P, speaker],
                    },
                }
            )
            clock += timedelta(minutes=rng.randrange(1, 5), seconds=rng.randrange(60))

    kept: list[dict] = []
    by_kind: dict[str, list[QSpec]] = {k: [] for k in KINDS}
    for q in questions:
        if all(k in where for k in q.evidence + q.support):
            by_kind[q.kind].append(q)
    for kind in KINDS[:-1]:
        for q in rng.sample(by_kind[kind], min(PER_KIND, len(by_kind[kind]))):
            answer = q.answer
            if q.date_of is not None:
                key, phrase = q.date_of
                answer = resolve_when(where[key][1], phrase).isoformat()
            evidence = [where[k][0] for k in q.evidence]
            kept.append(
                {
                    "user": uid,
                    "question": q.text,
                    "kind": kind,
                    "evidence": evidence,
                    "evidence_days": sorted({where[k][1].isoformat() for k in q.evidence}),
                    "answer": answer,
                    "needs_neighbour": q.neighbour,
                    "support": [where[k][0] for k in q.support],
                }
            )
    n_abstain = min(PER_KIND, max(1, round(len(kept) / (len(KINDS) - 1))))
    for text in rng.sample(abstention_questions(c, planted), n_abstain):
        kept.append(
            {
                "user": uid,
                "question": text,
                "kind": "abstention",
                "evidence": [],
                "evidence_days": [],
                "answer": None,
                "needs_neighbour": False,
                "support": [],
            }
        )
    return conversations, kept


def generate(out: Path, seed: int = 7, users: int = 8, sessions: int = 25, turns: int = 12) -> dict:
    """Write the dataset into `out` and return its manifest (parameters and statistics)."""
    if users < 1 or sessions < 1 or turns < 2:
        raise ValueError("need at least 1 user, 1 session and 2 turns per session")
    rng = random.Random(seed)
    width = max(2, len(str(users)))
    conversations: list[dict] = []
    questions: list[dict] = []
    for index in range(users):
        conv, qs = _user(rng, index, width, sessions, turns)
        conversations += conv
        questions += qs
    for number, q in enumerate(questions, 1):
        q["qid"] = f"q{number:04d}"
    fields = ("qid", "user", "question", "kind", "evidence", "evidence_days", "answer")
    questions = [{**{k: q[k] for k in fields}, **q} for q in questions]

    out.mkdir(parents=True, exist_ok=True)
    _write_jsonl(out / "conversations.jsonl", conversations)
    _write_jsonl(out / "questions.jsonl", questions)
    answerable = [q for q in questions if q["kind"] != "abstention"]
    manifest = {
        "seed": seed,
        "users": users,
        "sessions": sessions,
        "turns_per_session": turns,
        "turns": len(conversations),
        "questions": len(questions),
        "by_kind": dict(Counter(q["kind"] for q in questions)),
        "needs_neighbour": sum(q["needs_neighbour"] for q in questions),
        "needs_neighbour_share_answerable": round(
            sum(q["needs_neighbour"] for q in answerable) / max(1, len(answerable)), 3
        ),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write into")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=25, help="sessions per user")
    parser.add_argument("--turns", type=int, default=12, help="turns per session")
    args = parser.parse_args(argv)
    try:
        manifest = generate(args.out, args.seed, args.users, args.sessions, args.turns)
    except ValueError as exc:
        print(f"make_dataset: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(manifest))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
